import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDashboardBrowser, signUpWithKey, type DashboardBrowser } from "../support/browser.js";
import { postTrace, traceBody } from "../support/test-service.js";

/** The Attribution page in a real browser shows the values past GROUP_VALUES_PER_DAY as one (other) group, which cannot be narrowed to (D54). */
describe("the other group on the Attribution page", { timeout: 90_000 }, () => {
  let browser: DashboardBrowser;
  let page: Page;

  beforeAll(async () => {
    browser = await openDashboardBrowser(["--group-values-per-day", "2"]);
    page = browser.page;
    const key = await signUpWithKey(page, browser.service.url, "other@example.com", "other");
    for (const [user, cost] of [
      ["acme", 1],
      ["globex", 2],
      ["initech", 4],
      ["hooli", 0.5],
    ] as const) {
      const res = await postTrace(browser.service.url, traceBody(key, { user_id: user, cost_usd: cost }), { key });
      expect(res.status, await res.text()).toBe(202);
    }
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
  });

  it("ranks (other) with the tracked users, its spend the sum of the rest, with no link to narrow to it", async () => {
    await page.getByRole("link", { name: "Attribution" }).click();
    const rows = page.locator("table.groups tbody tr");
    await expect.poll(async () => (await rows.locator("td:nth-child(2)").allTextContents()).map((t) => t.trim())).toEqual(["(other)", "globex", "acme"]);
    const other = page.locator("tr[data-other]");
    expect(await other.locator("[data-cell=spend]").textContent()).toBe("$4.50");
    expect(await other.getAttribute("title")).toContain("bound on distinct values per day");
    expect(await other.getByRole("button").count()).toBe(0);
    expect(await other.getByRole("link").count()).toBe(0);
    // The chart draws (other) among the top groups, from GetUsageByGroupAndDay's other group.
    await expect.poll(() => page.locator(".attribution figure.chart").textContent()).toContain("(other)");
  });
});
