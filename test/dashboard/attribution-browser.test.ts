import type { Page, Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDashboardBrowser, projectApp, signUpWithKey, type DashboardBrowser } from "../support/browser.js";
import { postTrace, traceBody } from "../support/test-service.js";

const longError = `invalid_request_error: ${"the prompt is too long for this model; ".repeat(40)}end of message`;

/**
 * The attribution flows in a real browser: which customers cost most (Attribution page), in which
 * feature (click the customer), and their most expensive call (click it: the trace detail panel),
 * then sorting, searching, optional columns and the keyboard on the traces table.
 */
describe("attribution in a real browser", { timeout: 90_000 }, () => {
  let browser: DashboardBrowser;
  let service: DashboardBrowser["service"];
  let page: Page;
  let shot: DashboardBrowser["shot"];
  let key = "";
  /** The signed-up user's project's pages, /app/p/<id>/. */
  let app = "";

  beforeAll(async () => {
    browser = await openDashboardBrowser();
    ({ service, page, shot } = browser);
    key = await signUpWithKey(page, service.url, "grace@example.com", "attribution");
    app = projectApp(page);
    const traces: Record<string, unknown>[] = [
      {
        user_id: "acme",
        session_id: "conv-1",
        tags: ["checkout"],
        metadata: { feature: "summary" },
        cost_usd: 1.5,
        model: "gpt-4o",
        latency_ms: 1200,
      },
      {
        user_id: "acme",
        session_id: "conv-1",
        tags: ["search"],
        metadata: { feature: "chat" },
        cost_usd: 0.4,
        model: "gpt-4o-mini",
        latency_ms: 300,
      },
      {
        user_id: "acme",
        session_id: "conv-2",
        tags: ["checkout", "beta"],
        metadata: { feature: "summary", team: "payments" },
        environment: "production",
        cost_usd: 4.25,
        provider: "anthropic",
        model: "claude-sonnet-4",
        latency_ms: 5100,
        status: "error",
        error: longError,
      },
      { user_id: "globex", tags: ["search"], metadata: { feature: "chat" }, cost_usd: 2, model: "gpt-4o", latency_ms: 800 },
      { user_id: "initech", tags: ["checkout"], cost_usd: 0.05, provider: "gemini", model: "gemini-2.5-flash", latency_ms: 150 },
      { cost_usd: 0.01, latency_ms: 90 },
    ];
    for (const fields of traces) {
      const res = await postTrace(service.url, traceBody(key, fields), { key });
      expect(res.status, await res.text()).toBe(202);
    }
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
  });

  const groupRows = () => page.locator("table.groups tbody tr");

  it("three clicks: the customers who cost most, their feature, their most expensive call", async () => {
    // Click 1: the Attribution page ranks users by spend.
    await page.getByRole("link", { name: "Attribution" }).click();
    await expect
      .poll(async () => (await groupRows().locator("td:nth-child(2)").allTextContents()).map((t) => t.trim()))
      .toEqual(["acme", "globex", "initech", "(none)"]);
    expect(await page.locator("tr[data-group=acme] [data-cell=spend]").textContent()).toBe("$6.15");
    expect(await page.locator("table.groups thead").textContent()).toContain("p95 ≈");
    await expect.poll(() => page.locator(".attribution figure.chart rect").count()).toBeGreaterThan(0);
    await shot("attribution");

    // Click 2: the top customer; the page narrows to them and groups by tag. The metadata keys are
    // asked for only in the metadata view, which shows them.
    const keyReads: string[] = [];
    const onRequest = (request: Request) => {
      if (request.url().endsWith("/GetUsageByGroup") && request.postData()?.includes("DIMENSION_METADATA_KEY")) keyReads.push(page.url());
    };
    page.on("request", onRequest);
    await page.locator("tr[data-group=acme]").getByRole("button", { name: "acme" }).click();
    await expect.poll(() => new URL(page.url()).searchParams.get("user")).toBe("acme");
    expect(new URL(page.url()).searchParams.get("dim")).toBe("tag");
    await expect
      .poll(async () => (await groupRows().locator("td:nth-child(2)").allTextContents()).map((t) => t.trim()))
      .toEqual(["checkout", "beta", "search"]);
    expect(await page.locator("tr[data-group=checkout] [data-cell=spend]").textContent()).toBe("$5.75");
    expect(await page.locator(".chips").textContent()).toContain("user: acme");
    expect(keyReads).toEqual([]);
    // The same customer by metadata key: which feature.
    await page.locator("[data-dimension=metadata]").click();
    await expect.poll(() => page.locator("select[name=metadata-key]").inputValue()).toBe("feature");
    expect((await page.locator("select[name=metadata-key] option").allTextContents()).sort()).toEqual(["feature", "team"]);
    await expect.poll(() => page.locator("tr[data-group=summary] [data-cell=spend]").textContent()).toBe("$5.75");
    expect(keyReads).toHaveLength(1);
    expect(new URL(keyReads[0]!).searchParams.get("dim")).toBe("metadata");
    page.off("request", onRequest);

    // Click 3: their most expensive call opens in full.
    const costly = page.locator("ol.costly a").first();
    await expect.poll(() => costly.textContent()).toContain("$4.25");
    await costly.click();
    const panel = page.locator("[data-trace-detail]");
    await expect.poll(() => panel.locator("[data-field=error]").textContent()).toBe(longError);
    expect(page.url().split("?")[0]).toBe(`${app}traces`);
    expect(new URL(page.url()).searchParams.get("trace")).toBe(await panel.getAttribute("data-trace-detail"));
    expect(await panel.locator("[data-field=cost]").textContent()).toContain("$4.25");
    expect(await panel.locator("[data-field=tags]").textContent()).toBe("Tagscheckoutbeta");
    expect((await panel.locator("[data-field=metadata]").textContent())?.replace(/\s+/g, " ")).toContain("featuresummaryteampayments");
    await shot("trace-detail");

    // Its own URL: a reload opens the same panel.
    await page.reload();
    await expect.poll(() => page.locator("[data-trace-detail] [data-field=user]").textContent()).toContain("acme");

    // The other calls of the same session.
    await page.locator("[data-trace-detail]").getByRole("link", { name: "other calls of this session" }).click();
    await expect.poll(() => new URL(page.url()).searchParams.get("session")).toBe("conv-2");
    await expect.poll(() => page.locator("table.traces tbody tr").count()).toBe(1);
    // More from this user: every call of acme.
    await page.locator("table.traces tbody tr").first().click();
    await page.locator("[data-trace-detail]").getByRole("link", { name: "more from this user" }).click();
    await expect.poll(() => page.locator("table.traces tbody tr").count()).toBe(3);
  });

  it("sorts the traces by cost and latency, searches model and error text, and shows optional columns", async () => {
    await page.goto(`${app}traces`);
    const rows = page.locator("table.traces tbody tr");
    await expect.poll(() => rows.count()).toBe(6);
    const costs = async () => (await rows.locator("td:nth-child(7)").allTextContents()).map((t) => t.trim());
    await page.locator("th[data-sort=cost] button").click();
    await expect.poll(costs).toEqual(["$4.25", "$2.00", "$1.50", "$0.40", "$0.05", "$0.01"]);
    expect(await page.locator("th[data-sort=cost]").getAttribute("aria-sort")).toBe("descending");
    await page.locator("th[data-sort=cost] button").click();
    await expect.poll(costs).toEqual(["$0.01", "$0.05", "$0.40", "$1.50", "$2.00", "$4.25"]);
    await page.locator("th[data-sort=latency] button").click();
    await expect
      .poll(async () => (await rows.locator("td:nth-child(6)").allTextContents()).map((t) => t.trim()))
      .toEqual(["5,100", "1,200", "800", "300", "150", "90"]);

    await page.fill("input[name=search-model]", "GPT-4O");
    await page.press("input[name=search-model]", "Enter");
    // gpt-4o twice, gpt-4o-mini and the default gpt-4o-2024-08-06.
    await expect.poll(() => rows.count()).toBe(4);
    await page.fill("input[name=search-model]", "");
    await page.fill("input[name=search-error]", "TOO LONG");
    await page.press("input[name=search-error]", "Enter");
    await expect.poll(() => rows.count()).toBe(1);
    expect(new URL(page.url()).searchParams.get("error")).toBe("TOO LONG");
    await page.fill("input[name=search-error]", "");
    await page.press("input[name=search-error]", "Enter");
    await expect.poll(() => rows.count()).toBe(6);

    await page.locator("details.columns summary").click();
    await page.check("input[name=column-user]");
    await page.check("input[name=column-tags]");
    await expect.poll(async () => (await rows.locator("td[data-column=user]").allTextContents()).filter((t) => t !== "").length).toBe(5);
    expect(await page.locator("tr td[data-column=tags]").allTextContents()).toContain("checkout, beta");
    expect(new URL(page.url()).searchParams.get("cols")).toBe("user,tags");
  });

  it("opens a trace from the keyboard and gives focus back to its row on Escape", async () => {
    await page.goto(`${app}traces`);
    const first = page.locator("table.traces tbody tr").first();
    await expect.poll(() => first.getAttribute("data-trace-id")).toBeTruthy();
    const id = (await first.getAttribute("data-trace-id"))!;
    await first.focus();
    await page.keyboard.press("Enter");
    await expect.poll(() => page.locator("[data-trace-detail]").getAttribute("data-trace-detail")).toBe(id);
    // Focus moved into the panel.
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe("trace-detail-title");
    await page.keyboard.press("Escape");
    await expect.poll(() => page.locator("[data-trace-detail]").count()).toBe(0);
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute("data-trace-id"))).toBe(id);
    expect(new URL(page.url()).searchParams.get("trace")).toBeNull();
  });

  it("the overview takes filters and a custom date range, and shows spend by key and by provider", async () => {
    await page.getByRole("link", { name: "Overview" }).click();
    const spend = page.locator("[data-tile=total-spend] strong");
    await expect.poll(() => spend.textContent()).toBe("$8.21");
    const providers = page.locator("[data-breakdown=provider] .bar-list li");
    await expect
      .poll(async () => (await providers.locator(".label").allTextContents()).map((t) => t.trim()))
      .toEqual(["anthropic", "openai", "gemini"]);
    expect(await providers.first().locator(".value").textContent()).toContain("$4.25");
    expect(await page.locator("[data-breakdown=key] .bar-list li .label").allTextContents()).toEqual([
      expect.stringContaining("attribution"),
    ]);

    await page.selectOption("select[name=provider]", "openai");
    await expect.poll(() => spend.textContent()).toBe("$3.91");
    await page.selectOption("select[name=provider]", "");
    // A custom range that ends before the traces were sent holds none of them.
    await page.selectOption("select[name=range]", "custom");
    await page.fill("input[name=from]", "2024-01-01T00:00");
    await page.locator("input[name=from]").dispatchEvent("change");
    await page.fill("input[name=to]", "2024-01-02T00:00");
    await page.locator("input[name=to]").dispatchEvent("change");
    await expect.poll(() => page.locator("[data-tile=total-calls] strong").textContent()).toBe("0");
    expect(new URL(page.url()).searchParams.get("range")).toBe("custom");
    await page.selectOption("select[name=range]", "30d");
    await expect.poll(() => spend.textContent()).toBe("$8.21");
    // An attribute filter from the address bar narrows the overview too, and shows as a chip.
    await page.goto(`${app}?range=30d&user=globex`);
    await expect.poll(() => spend.textContent()).toBe("$2.00");
    expect(await page.locator(".chips").textContent()).toContain("user: globex");
  });
});
