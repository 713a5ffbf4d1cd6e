import type { BrowserContext, Page } from "playwright-core";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seriousAxeViolations } from "../support/axe.js";
import { launchBrowser, openDashboardBrowser, projectApp, signUpWithKey, type DashboardBrowser } from "../support/browser.js";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.js";

/**
 * The Alerts page in a real browser: an admin adds a webhook (its secret shown once), sends a test
 * event that a receiver verifies with `standardwebhooks`, resends it from the delivery log, and
 * creates, edits, mutes and deletes a rule; a viewer sees it all and changes nothing; axe at
 * desktop and phone widths.
 */
describe("dashboard in a real browser: alerts", { timeout: 120_000 }, () => {
  let browser: DashboardBrowser;
  let page: Page;
  let app = "";
  let receiver: WebhookReceiver;
  let secret = "";

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    browser = await openDashboardBrowser();
    page = browser.page;
    await signUpWithKey(page, browser.service.url, "alerts@example.com", "alerts");
    app = projectApp(page);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
  });

  const open = async (width = 1440) => {
    await page.setViewportSize({ width, height: 900 });
    await page.goto(`${app}alerts`);
    await page.locator("[data-section=rules]").waitFor();
  };

  it("a webhook's secret is shown once; its test event arrives signed, verifies, and can be sent again under the same id", async () => {
    await open();
    await page.fill("input[name=destination-name]", "ops hook");
    await page.fill("input[name=destination-url]", receiver.url);
    await page.getByRole("button", { name: "Add destination" }).click();
    secret = await page.locator("#webhook-secret").inputValue();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]{32,}$/);
    await page.getByRole("button", { name: "Done" }).click();
    expect(await page.locator("#webhook-secret").count()).toBe(0);
    await expect.poll(() => page.locator("tr[data-destination='ops hook'] td").nth(3).textContent()).toBe("Working");

    await page.getByRole("button", { name: "Send test event to ops hook" }).click();
    await expect.poll(() => receiver.received.length).toBe(1);
    const first = receiver.received[0]!;
    const verified = new Webhook(secret).verify(first.body, first.headers as Record<string, string>) as { type: string; data: { test: boolean } };
    expect(verified.type).toBe("alert.test");
    expect(verified.data.test).toBe(true);
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString("base64")}`).verify(first.body, first.headers as Record<string, string>)).toThrow();

    const delivery = page.locator("[data-section=delivery-log] tbody tr").first();
    await expect.poll(() => delivery.getAttribute("data-state")).toBe("delivered");
    expect(await delivery.locator("ol.attempts li").first().getAttribute("data-code")).toBe("204");
    await delivery.getByRole("button", { name: /^Resend/ }).click();
    await expect.poll(() => receiver.received.length).toBe(2);
    expect(receiver.received[1]!.headers["webhook-id"]).toBe(first.headers["webhook-id"]);
    await expect.poll(() => delivery.locator("ol.attempts li").count()).toBe(2);
    expect(await delivery.locator("ol.attempts li").last().textContent()).toContain("(sent by hand)");
  });

  it("creates a spend rule notifying the webhook, edits it, mutes it; a bad budget is refused naming the field", async () => {
    await open();
    await page.getByRole("button", { name: "New rule" }).click();
    await page.fill("input[name=rule-name]", "Daily spend");
    await page.fill("input[name=budget-usd]", "-3");
    await page.getByRole("checkbox", { name: "ops hook" }).check();
    await page.getByRole("button", { name: "Create rule" }).click();
    await expect.poll(() => page.locator("[data-section=rule-form] [role=alert]").textContent()).toContain("budget_usd");

    await page.fill("input[name=budget-usd]", "5");
    await page.selectOption("select[name=scope-kind]", { label: "One user" });
    await page.fill("input[name=scope-value]", "cust-001");
    await page.getByRole("button", { name: "Create rule" }).click();
    const row = page.locator("tr[data-rule='Daily spend']");
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.locator("td").nth(1).textContent()).toBe("Spend over a budget: $5.00 per day");
    expect(await row.locator("td").nth(2).textContent()).toBe("user cust-001");
    expect(await row.locator("td").nth(4).textContent()).toBe("50 %, 80 %, 100 %");

    await page.getByRole("button", { name: "Edit Daily spend" }).click();
    await page.fill("input[name=thresholds]", "80, 100");
    await page.getByRole("button", { name: "Save rule" }).click();
    await expect.poll(() => row.locator("td").nth(4).textContent()).toBe("80 %, 100 %");

    await page.getByRole("button", { name: "Mute Daily spend" }).click();
    await expect.poll(() => row.getAttribute("data-muted")).toBe("true");
    await page.reload();
    await expect.poll(() => page.locator("tr[data-rule='Daily spend']").getAttribute("data-muted")).toBe("true");
  });

  it("a viewer sees rules, destinations and the log, with no control to change them", async () => {
    await page.goto(`${app}members`);
    await page.fill("input[name=invite-email]", "viewer@example.com");
    await page.selectOption("select[name=invite-role]", { label: "viewer" });
    await page.getByRole("button", { name: "Invite", exact: true }).click();
    const link = await page.locator("input[name=invitation-url]").inputValue();
    let context: BrowserContext | undefined;
    try {
      context = await launchBrowser();
      const viewer = context.pages()[0] ?? (await context.newPage());
      viewer.setDefaultTimeout(20_000);
      await viewer.goto(link);
      await expect.poll(() => viewer.locator("input[name=email]").inputValue()).toBe("viewer@example.com");
      await viewer.fill("input[name=password]", "a viewer's long password");
      await viewer.getByRole("button", { name: "Create account" }).click();
      await viewer.waitForURL(app);
      await viewer.goto(`${app}alerts`);
      await expect.poll(() => viewer.locator("tr[data-rule='Daily spend']").count()).toBe(1);
      await expect.poll(() => viewer.locator("tr[data-destination='ops hook']").count()).toBe(1);
      await expect.poll(() => viewer.locator("[data-section=delivery-log] tbody tr").count()).toBe(1);
      expect(await viewer.getByRole("button", { name: /^(New rule|Edit|Mute|Delete|Resend|Send test event|Add destination)/ }).count()).toBe(0);
    } finally {
      await context?.close();
    }
  });

  it("deletes the rule; accessibility: axe finds no serious or critical violation at 1440 and 390 px", async () => {
    for (const width of [1440, 390]) {
      await open(width);
      await page.locator("tr[data-rule]").first().waitFor();
      expect(await seriousAxeViolations(page), `alerts at ${width}`).toEqual([]);
      if (width === 390) expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      await browser.shot(`alerts${width === 390 ? "-390" : ""}`);
    }
    await open();
    await page.getByRole("button", { name: "Delete Daily spend" }).click();
    await expect.poll(() => page.locator("tr[data-rule]").count()).toBe(0);
  });
});
