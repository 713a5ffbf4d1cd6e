import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPage, signInAtProvider, startSsoServices, type SsoServices } from "../sso/sso-browser.js";
import { projectPage } from "../support/browser.js";

/**
 * A user who signs in with single sign-on only has no password: Settings offers no password
 * change and no deletion (the server asks the password for both), and says why.
 */
describe("settings of a user who signs in with single sign-on only, in a real browser", { timeout: 90_000 }, () => {
  let sso: SsoServices;

  beforeAll(async () => {
    sso = await startSsoServices([{}]);
  }, 120_000);

  afterAll(async () => {
    await sso?.close();
  });

  it("shows the sessions, but no password change or deletion, and says why", async () => {
    const url = sso.services[0]!.url;
    const page = await freshPage();
    await page.goto(`${url}/auth/oidc/start`);
    expect((await signInAtProvider(page, "carol@example.com")).status()).toBe(302);
    await page.waitForURL(projectPage);
    await page.getByRole("link", { name: "Settings · API keys" }).click();
    await expect.poll(() => page.locator("[data-sso-only]").textContent()).toContain("You sign in with single sign-on");
    await expect.poll(() => page.locator("[data-section=sessions] [data-session]").count()).toBe(1);
    expect(await page.locator("[data-section=password]").count()).toBe(0);
    expect(await page.locator("[data-section=delete-account]").count()).toBe(0);
  });
});
