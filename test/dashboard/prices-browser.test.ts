import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seriousAxeViolations } from "../support/axe.js";
import { openDashboardBrowser, projectApp, signUpWithKey, type DashboardBrowser } from "../support/browser.js";
import { postTrace, traceBody } from "../support/test-service.js";

/**
 * Settings' Prices section in Debian's chromium: an admin adds a negotiated price, asks which price
 * applies to a model, sees a regex RE2 refuses explained, re-prices history with a progress bar
 * (yesterday's MISMATCH becomes MATCH), and deletes the price; axe finds nothing serious.
 */
describe("custom prices in a real browser", { timeout: 120_000 }, () => {
  let dashboard: DashboardBrowser;
  let page: Page;
  let key = "";
  const prices = () => page.locator("[data-section=prices]");

  beforeAll(async () => {
    dashboard = await openDashboardBrowser();
    page = dashboard.page;
    key = await signUpWithKey(page, dashboard.service.url, "admin@example.com", "production");
    // Paid at the negotiated $1 in and $2 out per million; the catalog says $2.50 and $10.
    const body = traceBody(key, { model: "gpt-4o", tokens_in: 1_000_000, tokens_out: 1_000_000, cost_usd: 3 });
    expect((await postTrace(dashboard.service.url, body, { key })).status).toBe(202);
  }, 120_000);

  afterAll(async () => {
    await dashboard?.close();
  });

  it("adds, checks, re-prices and deletes a price", async () => {
    const app = projectApp(page);
    await page.goto(`${app}settings`);
    await expect.poll(() => prices().textContent()).toContain("No custom prices");

    await prices().getByRole("button", { name: "Add a price" }).click();
    const form = page.locator("[data-section=price-form]");
    await form.getByLabel("Model id, prefix or pattern").fill("gpt-4o");
    await form.getByLabel("Input", { exact: true }).fill("1");
    await form.getByLabel("Output", { exact: true }).fill("2");
    await form.getByLabel("Batch input").fill("0.5");
    await form.getByLabel("Batch output").fill("1");
    expect(await seriousAxeViolations(page)).toEqual([]);
    await form.getByRole("button", { name: "Add price" }).click();
    const row = prices().locator("tr[data-price]");
    await expect.poll(() => row.count()).toBe(1);
    expect((await row.locator("td").allTextContents()).slice(0, 6)).toEqual(["openai", "exact", "gpt-4o", "1", "2", "always – on"]);

    const which = page.locator("[data-section=which-price]");
    const ask = async (model: string) => {
      await which.getByLabel("Model id").fill(model);
      await which.getByRole("button", { name: "Check" }).click();
    };
    await ask("gpt-4o");
    await expect.poll(() => which.locator("[data-answer]").textContent()).toBe(`This project's exact price "gpt-4o". 1M tokens in and 1M out cost $3.`);
    await ask("gpt-4o-mini");
    await expect.poll(() => which.locator("[data-answer]").textContent()).toBe("The catalog's gpt-4o-mini. 1M tokens in and 1M out cost $0.75.");
    await ask("acme-7b");
    await expect.poll(() => which.locator("[data-answer]").textContent()).toBe("No price: calls to this model are unpriced.");

    // A pattern RE2 refuses is explained, not saved.
    await row.getByRole("button", { name: "Edit gpt-4o" }).click();
    await form.getByLabel("Match").selectOption({ label: "regular expression (RE2)" });
    await form.getByLabel("Model id, prefix or pattern").fill("(gpt)\\1");
    await form.getByRole("button", { name: "Save price" }).click();
    await expect.poll(() => form.getByRole("alert").textContent()).toContain("pattern: is not a valid RE2 regular expression");
    await form.getByRole("button", { name: "Cancel" }).click();
    expect(await row.locator("td").nth(2).textContent()).toBe("gpt-4o");

    const reprice = page.locator("[data-section=reprice]");
    await reprice.getByRole("button", { name: "Re-price" }).click();
    await expect.poll(() => reprice.locator("[data-reprice-state]").getAttribute("data-reprice-state"), { timeout: 30_000 }).toBe("done");
    expect(await reprice.getByRole("status").textContent()).toBe("Done: 1 traces looked at, 1 re-priced.");
    expect(await reprice.getByRole("progressbar", { name: "Re-price progress" }).evaluate((p: HTMLProgressElement) => p.value / p.max)).toBe(1);
    expect(await seriousAxeViolations(page)).toEqual([]);
    await dashboard.shot("settings-prices");

    // The trace's check now agrees with what the client paid.
    await page.goto(`${app}traces`);
    await page.locator("table.traces tbody tr[data-trace-id]").first().click();
    await expect.poll(() => page.locator("body").textContent()).toContain("matches the client's cost (within 1 %)");
    expect(await page.locator("[data-field=server-cost] dd").textContent()).toBe("$3.00");

    await page.goto(`${app}settings`);
    await prices().getByRole("button", { name: "Delete gpt-4o" }).click();
    await expect.poll(() => prices().textContent()).toContain("No custom prices");
  });
});
