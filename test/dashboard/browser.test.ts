import { readFileSync } from "node:fs";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDashboardBrowser, projectPage, type DashboardBrowser } from "../support/browser.js";
import { postTrace, traceBody } from "../support/test-service.js";

/** Client addresses whose countries the bundled IP database knows (checked in ingest tests too). */
const addresses = { US: "8.8.8.8", GB: "81.2.69.160", IE: "2a00:1450:4001::1" };

// Generous limits: the machine is shared, and a cold start compiles the server and launches a browser.
describe("dashboard in a real browser", { timeout: 60_000 }, () => {
  let browser: DashboardBrowser;
  let service: DashboardBrowser["service"];
  let page: Page;
  let shot: DashboardBrowser["shot"];
  let key = "";

  beforeAll(async () => {
    browser = await openDashboardBrowser(["--trust-proxy"]);
    ({ service, page, shot } = browser);
    await browser.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: service.url });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
  });

  async function send(country: keyof typeof addresses, fields: Record<string, unknown>): Promise<number> {
    const res = await postTrace(service.url, traceBody(key, fields), {
      key,
      headers: { "x-forwarded-for": `10.0.0.1, ${addresses[country]}` },
    });
    return res.status;
  }

  it("signs up, creates a key shown once with a copy button and a warning", async () => {
    await page.goto(`${service.url}/`);
    await expect.poll(() => page.url()).toBe(`${service.url}/app/`);
    await page.getByRole("button", { name: "Sign up" }).click();
    await page.fill("input[name=email]", "ada@example.com");
    await page.fill("input[name=password]", "correct horse battery");
    await page.getByRole("button", { name: "Create account" }).click();
    // The dashboard opens the new user's project, named in the URL and in the header's picker.
    await page.waitForURL(projectPage);
    expect(await page.locator("select[name=project] option:checked").textContent()).toBe("ada@example.com / Default");
    await page.getByRole("link", { name: "Settings · API keys" }).click();
    await page.fill("input[name=key-name]", "browser-test");
    await page.getByRole("button", { name: "Create key" }).click();
    key = await page.locator("#new-key").inputValue();
    expect(key).toMatch(/^ct_[0-9A-Za-z]{40}$/);
    await expect.poll(() => page.locator(".new-key .warning").textContent()).toContain("environment variable");
    await page.getByRole("button", { name: "Copy", exact: true }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
    await expect.poll(() => page.locator("[data-key-name=browser-test] .status").textContent()).toBe("active");
    await expect.poll(() => page.locator("[data-section=plan] [data-plan]").textContent()).toBe("free");
  });

  it("shows traces sent through the REST endpoint with their values, filters them and downloads CSV", async () => {
    expect(
      await send("US", { provider: "openai", model: "gpt-4o", tokens_in: 1200, tokens_out: 350, latency_ms: 842, cost_usd: 0.0065 }),
    ).toBe(202);
    expect(
      await send("US", { provider: "openai", model: "gpt-4o-mini", tokens_in: 300, tokens_out: 20, latency_ms: 210, cost_usd: 0.000057 }),
    ).toBe(202);
    expect(
      await send("GB", {
        provider: "anthropic",
        model: "claude-sonnet-4",
        tokens_in: 5000,
        tokens_out: 900,
        latency_ms: 2300,
        cost_usd: 0.0285,
      }),
    ).toBe(202);
    expect(
      await send("GB", {
        provider: "anthropic",
        model: "claude-sonnet-4",
        tokens_in: 700,
        tokens_out: 0,
        latency_ms: 95,
        cost_usd: 0,
        status: "error",
        error: "overloaded_error: try again",
      }),
    ).toBe(202);
    expect(
      await send("IE", {
        provider: "gemini",
        model: "gemini-2.5-flash",
        tokens_in: 64,
        tokens_out: 12,
        latency_ms: 388,
        cost_usd: 0.0000123,
      }),
    ).toBe(202);

    await page.getByRole("link", { name: "Traces" }).click();
    const rows = page.locator("table.traces tbody tr");
    await expect.poll(() => rows.count()).toBe(5);
    // Newest first: the gemini call was sent last.
    const cells = async (row: number) => (await rows.nth(row).locator("td").allTextContents()).map((t) => t.trim());
    expect((await cells(0)).slice(1, 10)).toEqual(["gemini", "gemini-2.5-flash", "64", "12", "388", "$0.0000123", "success", "", "IE"]);
    expect((await cells(1)).slice(1, 10)).toEqual([
      "anthropic",
      "claude-sonnet-4",
      "700",
      "0",
      "95",
      "$0.00",
      "error",
      "overloaded_error: try again",
      "GB",
    ]);
    expect((await cells(4)).slice(1, 10)).toEqual(["openai", "gpt-4o", "1,200", "350", "842", "$0.0065", "success", "", "US"]);
    await shot("traces");

    await page.selectOption("select[name=status]", "error");
    await expect.poll(() => rows.count()).toBe(1);
    await page.selectOption("select[name=status]", "");
    await page.selectOption("select[name=provider]", "openai");
    await expect.poll(() => rows.count()).toBe(2);
    await page.selectOption("select[name=provider]", "");
    await page.fill("input[name=model]", "claude-sonnet-4");
    // The page refreshes every 5 s; what is typed and not yet applied must survive that.
    await page.waitForTimeout(5500);
    expect(await page.inputValue("input[name=model]")).toBe("claude-sonnet-4");
    await page.locator("input[name=model]").dispatchEvent("change");
    await expect.poll(() => rows.count()).toBe(2);

    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: "Download CSV" }).click()]);
    const csv = readFileSync((await download.path())!, "utf8")
      .trim()
      .split("\n");
    expect(csv[0]).toContain("cost_usd");
    expect(csv).toHaveLength(3); // header + the two claude-sonnet-4 traces
    expect(csv.slice(1).every((line) => line.includes("claude-sonnet-4") && line.includes("GB"))).toBe(true);
  });

  it("shades the countries the calls came from on the map", async () => {
    await page.getByRole("link", { name: "Geography" }).click();
    await expect.poll(() => page.locator("path.shaded").count()).toBe(3);
    for (const country of ["US", "GB", "IE"]) {
      expect(await page.locator(`path[data-country=${country}]`).getAttribute("class")).toContain("shaded");
    }
    expect(await page.locator("path[data-country=FR]").getAttribute("class")).not.toContain("shaded");
    expect(await page.locator("table.countries tbody tr").count()).toBe(3);
    expect(await page.locator("table.countries tr[data-country=US] td").nth(1).textContent()).toBe("2");
    await shot("geography");
  });

  it("the overview shows the totals and picks up new traces without a reload", async () => {
    await page.getByRole("link", { name: "Overview" }).click();
    const calls = page.locator("[data-tile=total-calls] strong");
    await expect.poll(() => calls.textContent()).toBe("5");
    expect(await page.locator("[data-tile=error-rate] strong").textContent()).toBe("20.0%");
    expect(await page.locator("[data-tile=total-spend] strong").textContent()).toBe("$0.0351");
    // The server's own prices: the failed Claude call (700 tokens in, cost 0) and the Gemini call
    // (priced by the client below the table's 2.5 Flash rates) disagree by more than 1 %.
    expect(await page.locator("[data-price-checks] [data-unpriced]").textContent()).toBe("0 unpriced calls");
    expect(await page.locator("[data-price-checks] [data-mismatched]").textContent()).toBe("2 calls");
    expect(await send("US", { model: "gpt-4o", cost_usd: 0.01 })).toBe(202);
    await expect.poll(() => calls.textContent(), { timeout: 12_000 }).toBe("6");
    expect(await page.locator("[data-price-checks] [data-mismatched]").textContent()).toBe("3 calls");
    await shot("overview");
  });

  it("revoking the key (after confirming) makes the next trace get 401", async () => {
    await page.getByRole("link", { name: "Settings · API keys" }).click();
    const row = page.locator("[data-key-name=browser-test]");
    await expect.poll(() => row.locator("[data-month]").textContent()).toContain("6");
    await shot("keys");
    await row.getByRole("button", { name: "Revoke…" }).click();
    await row.getByRole("button", { name: "Yes, revoke" }).click();
    await expect.poll(() => row.locator(".status").textContent()).toBe("revoked");
    // D20: every instance rejects a revoked key within 5 seconds.
    await expect.poll(() => send("US", {}), { timeout: 6000, interval: 250 }).toBe(401);
  });
});
