import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDashboardBrowser, projectApp, signUpWithKey, type DashboardBrowser } from "../support/browser.js";
import { postTrace, traceBody } from "../support/test-service.js";
const password = "correct horse battery";
const longModel = `model-${"x".repeat(250)}`;

/**
 * Regression tests for what a first user hit in a real browser: each `it` names the defect of
 * issue #14 it covers. Generous limits: the machine is shared.
 */
describe("dashboard in a real browser: layout, state, accessibility and formatting", { timeout: 90_000 }, () => {
  let browser: DashboardBrowser;
  let service: DashboardBrowser["service"];
  let page: Page;
  let shot: DashboardBrowser["shot"];
  let key = "";
  /** The signed-up user's project's pages, /app/p/<id>/. */
  let app = "";

  beforeAll(async () => {
    browser = await openDashboardBrowser(["--trust-proxy"]);
    ({ service, page, shot } = browser);
    key = await signUpWithKey(page, service.url, "grace@example.com", "fixes");
    app = projectApp(page);
    const traces: Record<string, unknown>[] = [
      { provider: "openai", model: "shared-model", cost_usd: 10, latency_ms: 100 },
      { provider: "anthropic", model: "shared-model", cost_usd: 3, latency_ms: 200 },
      { provider: "openai", model: longModel, cost_usd: 0.0000004, latency_ms: 300 },
      { provider: "gemini", model: "gemini-2.5-pro", cost_usd: 123_456.789, latency_ms: 400 },
    ];
    for (const fields of traces) {
      const res = await postTrace(service.url, traceBody(key, fields), { key, headers: { "x-forwarded-for": "10.0.0.1, 8.8.8.8" } });
      expect(res.status).toBe(202);
    }
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
  });

  const overview = async () => {
    await page.goto(app);
    await expect.poll(() => page.locator("[data-tile=total-calls] strong").textContent()).toBe("4");
  };

  it("4: one chart series per provider and model, so a model name under two providers is neither merged nor double-counted", async () => {
    await overview();
    const legend = await page.locator(".chart .legend").first().locator("[data-series]").allTextContents();
    expect(legend.filter((name) => name.endsWith("shared-model")).sort()).toEqual(["anthropic · shared-model", "openai · shared-model"]);
    expect(new Set(legend).size).toBe(legend.length);
    // The table view's total for today equals the spend total tile.
    const spendTable = page.locator(".chart").first().locator(".chart-table");
    await spendTable.locator("summary").click();
    const todayTotal = await spendTable.locator("tbody tr").last().locator("td").last().textContent();
    expect(todayTotal).toBe(await page.locator("[data-tile=total-spend] strong").textContent());
  });

  it("5: 7 days means whole UTC days, today included, on every page, and every page says so", async () => {
    for (const path of ["", "traces?range=7d", "geography?range=7d"]) {
      await page.goto(`${app}${path}`);
      await expect.poll(() => page.getByText("7, 30 and 90 days are whole UTC days, today included").count()).toBeGreaterThan(0);
    }
    await page.goto(`${app}traces?range=7d`);
    const href = (await page.getByRole("link", { name: "Download CSV" }).getAttribute("href"))!;
    const since = new URL(href, service.url).searchParams.get("since");
    const today = Math.floor(Date.now() / 86_400_000) * 86_400_000;
    expect(since).toBe(new Date(today - 6 * 86_400_000).toISOString());
  });

  it("6: a 256-character model name is cut short in the table and legends, whole on hover and on keyboard focus", async () => {
    await page.goto(`${app}traces`);
    const cell = page.locator(`table.traces td.model .truncate[title="${longModel}"]`);
    await expect.poll(() => cell.count()).toBe(1);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1400);
    const table = await page.locator("table.traces").boundingBox();
    expect(table!.width).toBeLessThan(1400);
    const closed = (await cell.boundingBox())!;
    expect(closed.width).toBeLessThanOrEqual(260);
    await cell.focus();
    const open = (await cell.boundingBox())!;
    expect(open.height).toBeGreaterThan(closed.height * 2); // wrapped to show the whole name
    await overview();
    for (const box of await page.locator(".legend, .bar-list").evaluateAll((els) => els.map((e) => e.scrollWidth - e.clientWidth))) {
      expect(box).toBeLessThanOrEqual(1);
    }
  });

  it("7: usable at 375 and 360 px: no sideways page, Log out and every page link on screen, tables scroll in their card, the map fills the width", async () => {
    for (const width of [375, 360]) {
      await page.setViewportSize({ width, height: 800 });
      for (const path of ["", "attribution", "traces", "geography", "settings", "members", "audit"]) {
        await page.goto(`${app}${path}`);
        await page.locator("main h1").first().waitFor();
        await page.waitForLoadState("networkidle");
        const wide = await page.evaluate(
          (w) =>
            [...document.querySelectorAll("body *")]
              .filter((e) => e.getBoundingClientRect().right > w + 1 && !e.closest(".table-wrap, .chart-table, .sr-only"))
              .map((e) => `${e.tagName}.${e.className}`)
              .slice(0, 5),
          width,
        );
        expect(wide, `${path} at ${width}`).toEqual([]);
        expect(await page.evaluate(() => document.documentElement.scrollWidth), `${path} at ${width}`).toBeLessThanOrEqual(width);
        for (const control of [
          page.getByRole("button", { name: "Log out", exact: true }),
          page.getByRole("link", { name: "Settings · API keys" }),
        ]) {
          const box = (await control.boundingBox())!;
          expect(box.x).toBeGreaterThanOrEqual(0);
          expect(box.x + box.width).toBeLessThanOrEqual(width);
        }
        if (path === "geography") {
          await page.locator("svg.map").waitFor();
          expect((await page.locator("svg.map").boundingBox())!.width).toBeGreaterThan(width - 60);
        }
        if (width === 375) await shot(`${path || "overview"}-375`.replace("settings", "keys"));
      }
    }
    await page.setViewportSize({ width: 1400, height: 900 });
  });

  it("8: a malformed range falls back with a notice instead of a blank page; an unknown route or project gets a not-found page", async () => {
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`${app}traces?range=custom&from=garbage&status=weird`);
    await expect.poll(() => page.locator("[data-url-notice]").textContent()).toContain('"garbage" is not a time (from)');
    expect(await page.locator("[data-url-notice]").textContent()).toContain('unknown status "weird"');
    await expect.poll(() => page.locator("table.traces tbody tr").count()).toBe(4);
    await page.goto(`${app}geography?range=forever`);
    await expect.poll(() => page.locator("[data-url-notice]").textContent()).toContain('unknown time range "forever"');
    await page.goto(`${app}nope`);
    await expect.poll(() => page.locator("[data-not-found] h1").textContent()).toBe("Page not found");
    // A link from before projects opens that page of the user's project, its query kept.
    await page.goto(`${service.url}/app/traces?range=7d`);
    await expect.poll(() => page.url()).toBe(`${app}traces?range=7d`);
    // A project the user may not see, as one that does not exist, is not found.
    await page.goto(`${service.url}/app/p/no-such-project/traces`);
    await expect.poll(() => page.locator("[data-not-found] h1").textContent()).toBe("Project not found");
    expect(errors).toEqual([]);
  });

  it("11: toggles say whether they are pressed; revoking moves focus sensibly; charts have a table view; loading and errors are shown; dark mode follows the system", async () => {
    await page.goto(`${app}geography`);
    const pressed = () => page.locator(".segmented button[aria-pressed=true]").allTextContents();
    await expect.poll(pressed).toEqual(["Calls"]);
    await page.getByRole("button", { name: "Spend" }).click();
    expect(await pressed()).toEqual(["Spend"]);
    await overview();
    expect(await page.locator("details.chart-table").count()).toBe(5);

    await page.goto(`${app}settings`);
    await page.fill("input[name=key-name]", "to-revoke");
    await page.getByRole("button", { name: "Create key" }).click();
    await page.getByRole("button", { name: "Done" }).click();
    const row = page.locator("[data-key-name=to-revoke]");
    await row.getByRole("button", { name: "Revoke…" }).click();
    const focused = () => page.evaluate(() => document.activeElement?.textContent?.trim());
    await expect.poll(focused).toBe("Yes, revoke");
    await row.getByRole("button", { name: "Cancel" }).click();
    await expect.poll(focused).toBe("Revoke…");
    await page.keyboard.press("Enter");
    await expect.poll(focused).toBe("Yes, revoke");
    await page.keyboard.press("Enter");
    await expect.poll(() => row.locator(".status").textContent()).toBe("revoked");
    await expect.poll(focused).toBe("revoked");

    // A slow network shows "Loading…", a failing one an error, never an empty table.
    await page.route("**/calltrace.v1.QueryService/ListTraces", async (route) => {
      await new Promise((r) => setTimeout(r, 1500));
      await route.abort();
    });
    await page.goto(`${app}traces`);
    await expect.poll(() => page.locator("[role=status].loading").textContent()).toBe("Loading traces…");
    await expect.poll(() => page.locator("[role=alert]").first().textContent(), { timeout: 10_000 }).toContain("Could not load traces");
    await page.unroute("**/calltrace.v1.QueryService/ListTraces");
    await page.route("**/calltrace.v1.QueryService/GetUsageByGroup", async (route) => {
      await new Promise((r) => setTimeout(r, 1500));
      await route.abort();
    });
    await page.goto(`${app}attribution`);
    await expect.poll(() => page.locator("[role=status].loading").first().textContent()).toBe("Loading the groups…");
    await expect.poll(() => page.locator("[role=alert]").first().textContent(), { timeout: 10_000 }).toContain("Could not load the groups");
    await page.unroute("**/calltrace.v1.QueryService/GetUsageByGroup");

    const background = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
    await page.emulateMedia({ colorScheme: "light" });
    expect(await background()).toBe("rgb(246, 247, 249)");
    await page.emulateMedia({ colorScheme: "dark" });
    expect(await background()).toBe("rgb(15, 20, 26)");
    await page.emulateMedia({ colorScheme: "light" });
  });

  it("12: one money formatter, plain and precise; times labelled UTC; percentiles marked as estimates; the axis label is not clipped", async () => {
    await page.goto(`${app}traces`);
    await expect.poll(() => page.locator("table.traces tbody tr").count()).toBe(4);
    const costs = await page.locator("table.traces tbody tr td:nth-child(7)").allTextContents();
    expect(costs).toEqual(["$123,456.79", "$0.0000004", "$3.00", "$10.00"]);
    expect(await page.locator("table.traces th").first().textContent()).toContain("Time (UTC)");
    await overview();
    expect(await page.locator("[data-tile=total-spend] strong").textContent()).toBe("$123,469.79");
    expect(await page.locator("[data-tile=p50] > span").textContent()).toBe("p50 latency (estimate)");
    expect(await page.locator("[data-tile=p95] > span").textContent()).toBe("p95 latency (estimate)");
    const axis = page.locator("[data-axis-max]").first();
    const left = await axis.evaluate((el) => (el as SVGTextElement).getBBox().x);
    expect(left).toBeGreaterThanOrEqual(0);
    expect(await axis.textContent()).toMatch(/^\$/);
  });

  it("12: the model filter finds any model containing the text, in any case, in the table and the download", async () => {
    await page.goto(`${app}traces`);
    const rows = page.locator("table.traces tbody tr");
    await expect.poll(() => rows.count()).toBeGreaterThanOrEqual(4);
    await page.fill("input[name=model]", "SHARED");
    await page.locator("input[name=model]").dispatchEvent("change");
    await expect.poll(() => rows.locator("td.model").allTextContents()).toEqual(["shared-model", "shared-model"]);
    const href = (await page.getByRole("link", { name: "Download CSV" }).getAttribute("href"))!;
    const csv = await (await page.request.get(new URL(href, service.url).href)).text();
    expect(csv.trim().split("\n")).toHaveLength(3);
  });

  it('12: a key\'s "Last used" refreshes without a reload', async () => {
    await page.goto(`${app}settings`);
    await page.fill("input[name=key-name]", "watched");
    await page.getByRole("button", { name: "Create key" }).click();
    const watched = await page.locator("#new-key").inputValue();
    await page.getByRole("button", { name: "Done" }).click();
    const lastUsed = page.locator("[data-key-name=watched] [data-last-used]");
    await expect.poll(() => lastUsed.textContent()).toBe("never");
    expect((await postTrace(service.url, traceBody(watched), { key: watched })).status).toBe(202);
    await expect.poll(() => lastUsed.textContent(), { timeout: 15_000 }).toBe("just now");
  });

  it("account: the key limit is shown and enforced in the page; password change and deletion work from Settings", async () => {
    await page.goto(`${app}settings`);
    await expect.poll(() => page.locator("[data-key-count]").textContent()).toMatch(/^\d+ of 10 active keys in use\.$/);
    await page.fill("input[name=current-password]", password);
    await page.fill("input[name=new-password]", "an even better password");
    await page.getByRole("button", { name: "Change password" }).click();
    await expect
      .poll(() => page.locator("[data-section=password] [role=status]").textContent())
      .toBe("Password changed. 0 other sessions logged out.");
    await expect.poll(() => page.locator("[data-section=sessions] li").count()).toBe(1);
    await shot("settings-account");
    await page.locator("[data-section=delete-account] summary").click();
    await page.fill("input[name=delete-password]", "an even better password");
    await page.getByRole("button", { name: "Delete account and all its data" }).click();
    await expect.poll(() => page.getByRole("button", { name: "Create account" }).count()).toBe(1);
    expect((await postTrace(service.url, traceBody(key), { key })).status).toBe(401);
  });
});
