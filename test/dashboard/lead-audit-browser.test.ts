import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seriousAxeViolations } from "../support/axe.js";
import { openDashboardBrowser, projectApp, signUpWithKey, type DashboardBrowser } from "../support/browser.js";
import { postTrace, traceBody } from "../support/test-service.js";

/**
 * What a team lead's audit found (issue #26), in a real browser: each `it` names the bug it
 * covers (B1 to B7), then accessibility (axe on every page at desktop and phone widths, and the
 * keyboard on charts and legends). Generous limits: the machine is shared.
 */
describe("dashboard in a real browser: the lead's audit", { timeout: 120_000 }, () => {
  let browser: DashboardBrowser;
  let service: DashboardBrowser["service"];
  let page: Page;
  let key = "";
  /** The signed-up user's project's pages, /app/p/<id>/. */
  let app = "";
  let claudeDay = "";

  beforeAll(async () => {
    browser = await openDashboardBrowser();
    ({ service, page } = browser);
    key = await signUpWithKey(page, service.url, "lead@example.com", "audit");
    app = projectApp(page);
    // o3 is the cheapest model overall (third by spend), the only one under `q=o3`.
    const traces: Record<string, unknown>[] = [
      {
        model: "o3",
        cost_usd: 3,
        user_id: "cust-001",
        tags: ["alpha", "beta"],
        metadata: { team: "core", feature: "search" },
        latency_ms: 900,
      },
      {
        model: "gpt-4o-mini",
        cost_usd: 8,
        user_id: "cust-002",
        tags: ["alpha", "beta"],
        metadata: { team: "core", feature: "chat" },
        latency_ms: 300,
      },
      {
        provider: "anthropic",
        model: "claude-sonnet-4",
        cost_usd: 6,
        user_id: "cust-003",
        tags: ["alpha"],
        metadata: { team: "growth", feature: "chat" },
        latency_ms: 2000,
        status: "error",
        error: "rate limited",
      },
      { model: "gpt-4o-mini", cost_usd: 0.5, latency_ms: 100 },
    ];
    for (const fields of traces) {
      expect((await postTrace(service.url, traceBody(key, fields), { key })).status).toBe(202);
      // The UTC day the claude call is placed on: the trends test reads that day's row, not the last.
      if (fields.model === "claude-sonnet-4") claudeDay = new Date().toISOString().slice(0, 10);
    }
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
  });

  const open = async (path: string, width = 1440) => {
    await page.setViewportSize({ width, height: 900 });
    await page.goto(`${app}${path}`);
    await page.locator("main h1").first().waitFor();
    await page.waitForLoadState("networkidle");
  };

  it("B1: a metadata key other than the first has its own parameter (mkey), not the API-key filter's `key`", async () => {
    await open("attribution?dim=metadata");
    const select = page.locator("select[name=metadata-key]");
    await expect.poll(() => select.locator("option").allTextContents()).toEqual(["feature", "team"]);
    await select.selectOption("team");
    await expect
      .poll(() => page.locator("table.groups tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-group"))))
      .toEqual(["core", "growth", ""]);
    const url = new URL(page.url());
    expect(url.searchParams.get("mkey")).toBe("team");
    expect(url.searchParams.has("key")).toBe(false);
    expect(await select.inputValue()).toBe("team");
  });

  it("B2: chart text is 11 CSS pixels on screen at 1440 and at 390 wide", async () => {
    for (const width of [1440, 390]) {
      for (const path of ["", "attribution"]) {
        await open(path, width);
        await page.locator(".chart text.axis").first().waitFor();
        const sizes = await page
          .locator(".chart text.axis")
          .evaluateAll((texts) =>
            texts.map((t) => (t as SVGTextElement).getScreenCTM()!.a * Number.parseFloat(getComputedStyle(t).fontSize)),
          );
        expect(sizes.length, `${path} at ${width}`).toBeGreaterThan(0);
        for (const size of sizes) expect(size, `${path} at ${width}`).toBeCloseTo(11, 1);
      }
    }
  });

  it("B4: a model keeps its colour whatever its rank: all models, or o3 alone", async () => {
    const swatch = () =>
      page
        .locator(".legend span", { hasText: "openai · o3" })
        .locator("i")
        .first()
        .evaluate((i) => getComputedStyle(i).backgroundColor);
    await open("?range=7d");
    await expect.poll(() => page.locator(".legend [data-series]").count()).toBeGreaterThan(2);
    const amongAll = await swatch();
    // Names share a palette slot now and then: within a view each series still has its own colour.
    const swatches = await page
      .locator(".chart")
      .first()
      .locator(".legend i")
      .evaluateAll((is) => is.map((i) => getComputedStyle(i).backgroundColor));
    expect(new Set(swatches).size).toBe(swatches.length);
    const barOf = () =>
      page
        .locator(".bar-list li", { hasText: "openai · o3" })
        .locator(".fill")
        .first()
        .evaluate((f) => getComputedStyle(f).backgroundColor);
    expect(await barOf()).toBe(amongAll);
    await open("?range=30d&q=o3");
    await expect.poll(() => page.locator(".legend [data-series]").first().getAttribute("data-series")).toBe("openai\no3");
    expect(await swatch()).toBe(amongAll);
    expect(await barOf()).toBe(amongAll);
  });

  it("B5: tags that overlap on the same calls are drawn side by side, not stacked, and the chart says so", async () => {
    await open("attribution?dim=tag");
    const chart = page.locator(".attribution .card", { hasText: "Spend per day, top" });
    // alpha $17 and beta $11 share two calls: stacked, the day would read $28.50.
    await expect.poll(() => chart.locator("[data-axis-max]").textContent()).toBe("$17.00");
    expect(await chart.locator("h2").textContent()).toContain("side by side, not stacked: a call with several tags counts in each");
    await chart.locator("summary").click();
    expect(await chart.locator(".chart-table thead th").allTextContents()).not.toContain("Total");
  });

  it("B6: at 390 px every page's essential columns and actions are on screen; ids do not wrap mid-word", async () => {
    const onScreen = async (locator: ReturnType<Page["locator"]>, what: string) => {
      const box = (await locator.first().boundingBox())!;
      expect(box, what).not.toBeNull();
      expect(box.x, what).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width, what).toBeLessThanOrEqual(390);
    };
    await open("attribution?dim=user", 390);
    const id = page.locator("table.groups button.group", { hasText: "cust-001" });
    await id.waitFor();
    expect(await id.evaluate((b) => b.getClientRects().length)).toBe(1);
    expect((await id.boundingBox())!.height).toBeLessThan(24);
    const row = page.locator('table.groups tr[data-group="cust-001"]');
    for (const cell of ["td.group-value", "[data-cell=spend]", "a"]) await onScreen(row.locator(cell), `attribution ${cell}`);

    await open("traces", 390);
    const first = page.locator("table.traces tbody tr").first();
    await first.waitFor();
    const header = await page
      .locator("table.traces thead th")
      .evaluateAll((ths) =>
        ths
          .filter((th) => th.getBoundingClientRect().right <= 390 && th.getBoundingClientRect().width > 0)
          .map((th) => th.textContent!.trim()),
      );
    for (const column of ["Time (UTC)", "Model", "Latency (ms)", "Cost (USD)", "Status"]) expect(header.join("|")).toContain(column);
    await onScreen(first.locator(".status"), "traces status");
    // The time goes on two lines, date and time, neither broken.
    expect(await first.locator("td.time span").evaluateAll((spans) => spans.map((s) => s.getClientRects().length))).toEqual([1, 1]);

    await open("geography", 390);
    await page.locator("table tbody tr").first().waitFor();
    for (const cell of await page.locator("table tbody tr").first().locator("td").all()) await onScreen(cell, "geography cell");

    await open("settings", 390);
    await onScreen(page.locator("[data-key-name=audit]").getByRole("button", { name: "Revoke…" }), "Revoke");
    await onScreen(page.locator("[data-key-name=audit] .key-name"), "key name");
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it("accessibility: axe finds no serious or critical violation on any page, at 1440 and 390 px (and dark at 1440)", async () => {
    const traceId = await (async () => {
      await open("traces");
      return (await page.locator("table.traces tbody tr").first().getAttribute("data-trace-id"))!;
    })();
    const pages = [
      "",
      "attribution",
      "attribution?dim=tag",
      "attribution?dim=metadata",
      "traces",
      `traces?trace=${traceId}`,
      "geography",
      "settings",
      "members",
      "audit",
    ];
    const found: Record<string, unknown> = {};
    for (const [width, colorScheme] of [
      [1440, "light"],
      [390, "light"],
      [1440, "dark"],
    ] as const) {
      await page.emulateMedia({ colorScheme });
      for (const path of pages) {
        await open(path, width);
        // The charts' table views are checked too.
        for (const summary of await page.locator("details.chart-table summary").all()) await summary.click();
        const violations = await seriousAxeViolations(page);
        if (violations.length > 0) found[`${path || "overview"} at ${width}, ${colorScheme}`] = violations;
      }
    }
    await page.emulateMedia({ colorScheme: "light" });
    expect(found).toEqual({});
  });

  it("keyboard: each legend and bar list is one tab stop, which shows every name whole", async () => {
    await open("");
    const lists = page.locator(".legend, .bar-list");
    expect(await lists.count()).toBeGreaterThan(3);
    // Tab through the whole page: no stop may be inside a legend or bar list, only on it.
    await page.locator("main h1").click();
    const stops: string[] = [];
    for (let i = 0; i < 80; i++) {
      await page.keyboard.press("Tab");
      const where = await page.evaluate(() => {
        const active = document.activeElement!;
        const list = active.closest(".legend, .bar-list");
        return list ? (list === active ? "list" : "inside") : active.tagName;
      });
      stops.push(where);
    }
    expect(stops).not.toContain("inside");
    expect(stops.filter((s) => s === "list").length).toBeGreaterThanOrEqual(await lists.count());
  });

  it("trends: every headline figure shows its change against the previous period, and error rate and latency have charts per hour (up to 48 hours) or per day, under any filter", async () => {
    // The seeded calls (4, $17.50, 1 error) are the previous period of a range that starts now.
    // A range from the next whole second (the custom range's precision), after every seeded call.
    const start = new Date(Math.ceil((Date.now() + 1) / 1000) * 1000);
    await new Promise((resolve) => setTimeout(resolve, start.getTime() - Date.now() + 50));
    for (const fields of [
      { model: "gpt-4o-mini", cost_usd: 20, latency_ms: 400 },
      { model: "gpt-4o-mini", cost_usd: 15, latency_ms: 400, status: "error", error: "timeout" },
    ]) {
      expect((await postTrace(service.url, traceBody(key, fields), { key })).status).toBe(202);
    }
    // The hour the two calls are in (the range may reach into the next).
    const postedHour = `${new Date().toISOString().slice(0, 13).replace("T", " ")}:00`;
    const iso = (d: Date) => d.toISOString().slice(0, 19);
    const range = `range=custom&from=${iso(start)}&to=${iso(new Date(start.getTime() + 10 * 60_000))}`;
    const change = (tile: string) => page.locator(`[data-tile=${tile}] [data-change]`).textContent();
    await open(`?${range}`);
    await expect.poll(() => page.locator("[data-tile=total-calls] strong").textContent()).toBe("2");
    // The previous period is its own read, which may answer after the current one's.
    await expect.poll(() => change("total-spend")).toBe("▲ +100.0% against the previous period");
    await expect.poll(() => change("total-calls")).toBe("▼ −50.0% against the previous period");
    await expect.poll(() => change("tokens")).toBe("▼ −50.0% against the previous period");
    await expect.poll(() => change("error-rate")).toBe("▲ +25.0 pp against the previous period");
    await expect.poll(() => change("p95")).toMatch(/^(▲|▼) [+−]\d+\.\d% against the previous period$|^no change/);
    await expect.poll(() => page.locator("[data-previous]").textContent()).toContain("($17.50, 4 calls)");

    // A range of up to 48 hours has its trends per hour; they agree with the tiles (the calls are in this hour).
    const table = async (name: string, column: string) => {
      const chart = page.locator(".card", { has: page.locator(`h2:text-is("${name}")`) });
      await chart.locator("summary").click();
      return chart.locator(".chart-table tbody tr", { has: page.locator(`th:text-is("${column}")`) }).locator("td").allTextContents();
    };
    expect(await table("Error rate per hour (%)", postedHour)).toEqual(["50.0%"]);
    const p95 = (await page.locator("[data-tile=p95] strong").textContent())!.replace("≈ ", "");
    expect((await table("Latency per hour, p50 and p95 (ms, estimates)", postedHour))[1]).toBe(p95);
    await open("?range=24h");
    const hours = page.locator(".card", { has: page.locator('h2:text-is("Error rate per hour (%)")') }).locator(".chart-table tbody tr");
    await expect.poll(() => hours.count()).toBeGreaterThanOrEqual(24);
    expect(await hours.first().locator("th").textContent()).toMatch(/^\d{4}-\d\d-\d\d \d\d:00$/);

    // Under a filter (only the claude calls), against the same filter before.
    await open(`?${range}&q=claude`);
    await expect.poll(() => page.locator("[data-tile=total-calls] strong").textContent()).toBe("0");
    await open(`?range=7d&q=claude`);
    await expect.poll(() => page.locator("[data-tile=total-calls] strong").textContent()).toBe("1");
    await expect.poll(() => change("total-calls")).toBe("new: none before against the previous period");
    expect(await table("Error rate per day (%)", claudeDay)).toEqual(["100.0%"]);
  });

  it("B7: sign-up says what it is doing while the password is hashed, and a retry after a lost answer logs in", async () => {
    await page.getByRole("button", { name: "Log out", exact: true }).click();
    await page.getByRole("button", { name: "Sign up" }).click();
    // The sign-up page passes axe too, at both widths.
    for (const width of [1440, 390]) {
      await page.setViewportSize({ width, height: 900 });
      expect(await seriousAxeViolations(page), `sign-up at ${width}`).toEqual([]);
    }
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.fill("input[name=email]", "retry@example.com");
    await page.fill("input[name=password]", "correct horse battery");
    // The first answer is lost (the person left the page): the server still made the account.
    let served = 0;
    await page.route("**/calltrace.v1.AuthService/SignUp", async (route) => {
      await route.fetch();
      served += 1;
      await route.abort();
    });
    await page.getByRole("button", { name: "Create account" }).click();
    await expect.poll(() => page.locator("[data-progress]").textContent()).toContain("Creating your account");
    await expect.poll(() => page.locator("[role=alert]").count()).toBe(1);
    expect(served).toBe(1);
    await page.unroute("**/calltrace.v1.AuthService/SignUp");
    await page.getByRole("button", { name: "Create account" }).click();
    await expect.poll(() => page.getByRole("link", { name: "Settings · API keys" }).count()).toBe(1);
    expect(await page.locator(".top .who").textContent()).toContain("retry@example.com");
  });
});
