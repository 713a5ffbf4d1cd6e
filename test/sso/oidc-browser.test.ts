import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DashboardClient } from "../dashboard/dashboard-client.js";
import { runCliRaw, type ServiceProcess } from "../support/cli.js";
import { tempDir } from "../support/temp-dir.js";
import {
  auditOf,
  callbackUrlFor,
  clientOf,
  domainJoin,
  freshPage,
  signInAtProvider,
  type SsoServices,
  startSsoServices,
} from "./sso-browser.js";
import type { TestProvider } from "./test-provider.js";

// Single sign-on end to end: Debian's chromium signs in at a real OpenID provider (oidc-provider)
// started here, which sends it back to a real `calltrace serve`.

const clockAhead = fileURLToPath(new URL("./clock-ahead.mjs", import.meta.url));

let sso: SsoServices;
let provider: TestProvider;
let service: ServiceProcess;
/** A second service whose clock runs 10 minutes ahead of the provider's. */
let aheadService: ServiceProcess;

beforeAll(async () => {
  sso = await startSsoServices([{}, { env: { NODE_OPTIONS: `--import=${clockAhead}`, CLOCK_AHEAD_SECONDS: "600" } }]);
  provider = sso.provider;
  [service, aheadService] = sso.services as [ServiceProcess, ServiceProcess];
});

afterAll(async () => {
  await sso?.close();
});

describe("single sign-on with OpenID Connect", () => {
  it("signs a new person in from the log-in page, lands on the dashboard, and gives them an organization", async () => {
    const page = await freshPage();
    let authorizeUrl = "";
    page.on("request", (request) => {
      if (request.url().startsWith(`${provider.issuer}/auth?`)) authorizeUrl = request.url();
    });
    await page.goto(`${service.url}/app/`);
    await page.getByRole("link", { name: "Sign in with single sign-on" }).click();
    await page.waitForURL(`${provider.issuer}/**`);
    const callback = await signInAtProvider(page, "ada@example.com");
    expect(callback.status()).toBe(302);
    await page.waitForURL(`${service.url}/app/`);
    await expect.poll(() => page.locator(".who .email").textContent()).toBe("ada@example.com");

    const ada = await clientOf(page, service.url);
    const session = await ada.ok("AuthService/GetSession");
    expect(session.ssoEnabled).toBe(true);
    expect(session.session.email).toBe("ada@example.com");
    expect(session.session.hasPassword ?? false).toBe(false);
    expect(session.session.accountId).not.toBe("");
    const { organizations } = await ada.ok("TeamService/ListOrganizations");
    expect(organizations).toHaveLength(1);
    expect(organizations[0].role).toBe("ROLE_OWNER");
    const audit = await auditOf(ada, organizations[0].organization.id);
    expect(audit.map((e) => [e.action, e.actor])).toContainEqual(["sso.sign_in", "ada@example.com"]);

    // The provider was asked for a code with PKCE (S256); the flow cookie is gone after use.
    const authorize = new URL(authorizeUrl);
    expect(authorize.searchParams.get("code_challenge_method")).toBe("S256");
    expect(authorize.searchParams.get("state")).toBeTruthy();
    expect(authorize.searchParams.get("nonce")).toBeTruthy();
    const cookies = await page.context().cookies(`${service.url}/auth/oidc/callback`);
    expect(cookies.map((c) => c.name).sort()).toEqual(["ct_csrf", "ct_session"]);

    // An SSO-only user has no password to guess.
    const guesser = new DashboardClient(service.url);
    const logIn = await guesser.call("AuthService/LogIn", { email: "ada@example.com", password: "" });
    expect(logIn.status).toBe(401);

    // Signing in again finds the same user, with no second organization.
    await page.goto(`${service.url}/auth/oidc/start`);
    await page.waitForURL(`${service.url}/app/`);
    const again = await clientOf(page, service.url);
    expect((await again.ok("AuthService/GetSession")).session.userId).toBe(session.session.userId);
    expect((await again.ok("TeamService/ListOrganizations")).organizations).toHaveLength(1);
  });

  it("refuses a callback whose state is not the one this browser was sent with", async () => {
    const page = await freshPage();
    await page.goto(`${service.url}/auth/oidc/start`);
    const callback = await callbackUrlFor(page, service.url, "mallory@example.com");
    const wrong = new URL(callback);
    wrong.searchParams.set("state", "a-state-this-browser-never-sent");
    expect((await page.goto(wrong.href))?.status()).toBe(403);
    await expect.poll(() => page.locator("#sso-error").textContent()).toMatch(/failed verification.*state/);
    expect((await page.context().cookies(service.url)).map((c) => c.name)).not.toContain("ct_session");
    expect((await (await clientOf(page, service.url)).ok("AuthService/GetSession")).session).toBeUndefined();
    // The refusal ended the flow: its right state cannot be tried next.
    expect((await page.goto(callback.href))?.status()).toBe(400);
    // The refusals are logged in words; the code is not.
    await expect.poll(() => service.lines.filter((l) => l.includes("single sign-on refused")).length).toBeGreaterThanOrEqual(2);
    expect(service.lines.join("\n")).not.toContain(callback.searchParams.get("code")!);
  });

  it("refuses a replayed code: again in the same browser, and with another browser's own state", async () => {
    const page = await freshPage();
    let callbackUrl = "";
    page.on("request", (request) => {
      if (request.url().includes("/auth/oidc/callback")) callbackUrl = request.url();
    });
    await page.goto(`${service.url}/auth/oidc/start`);
    expect((await signInAtProvider(page, "grace@example.com")).status()).toBe(302);
    await page.waitForURL(`${service.url}/app/`);
    const code = new URL(callbackUrl).searchParams.get("code");
    expect(code).toBeTruthy();

    // The same browser: its flow ended with the first use.
    const replay = await page.goto(callbackUrl);
    expect(replay?.status()).toBe(400);
    await expect.poll(() => page.locator("#sso-error").textContent()).toMatch(/not started in this browser, was finished already/);

    // An attacker with the code starts a flow of their own and hands the code in with their state:
    // the provider refuses a code used once already.
    const attacker = await freshPage();
    await attacker.route(/^http:\/\/localhost:\d+\/auth\?/, (route) => route.abort());
    let authorizeUrl = "";
    attacker.on("request", (request) => {
      if (request.url().startsWith(`${provider.issuer}/auth?`)) authorizeUrl = request.url();
    });
    await attacker.goto(`${service.url}/auth/oidc/start`).catch(() => undefined);
    const state = new URL(authorizeUrl).searchParams.get("state")!;
    const stolen = new URL(callbackUrl);
    stolen.searchParams.set("state", state);
    const refused = await attacker.goto(stolen.href);
    expect(refused?.status()).toBe(403);
    await expect.poll(() => attacker.locator("#sso-error").textContent()).toMatch(/refused the sign-in \(invalid_grant/);
    expect((await (await clientOf(attacker, service.url)).ok("AuthService/GetSession")).session).toBeUndefined();
  });

  it("refuses an ID token that has expired by this server's clock", async () => {
    const page = await freshPage();
    await page.goto(`${aheadService.url}/auth/oidc/start`);
    const callback = await signInAtProvider(page, "late@example.com");
    expect(callback.status()).toBe(403);
    await expect.poll(() => page.locator("#sso-error").textContent()).toMatch(/failed verification.*"exp".*expiration/);
    expect((await (await clientOf(page, aheadService.url)).ok("AuthService/GetSession")).session).toBeUndefined();
  });

  it("refuses an email the provider has not verified", async () => {
    const page = await freshPage();
    await page.goto(`${service.url}/auth/oidc/start`);
    const callback = await signInAtProvider(page, "unverified.carol@example.com");
    expect(callback.status()).toBe(403);
    await expect
      .poll(() => page.locator("#sso-error").textContent())
      .toMatch(/has not verified the email address unverified\.carol@example\.com/);
    const admin = new DashboardClient(service.url);
    expect((await admin.call("AuthService/LogIn", { email: "unverified.carol@example.com", password: "whatever it is" })).status).toBe(401);
  });

  it("joins a person from the organization's email domain with its join role, and audits it", () => domainJoin(service.url));

  it("answers bad requests with a clear page and status, and keeps serving", async () => {
    const noFlow = await fetch(`${service.url}/auth/oidc/callback?code=abc&state=def`, { redirect: "manual" });
    expect(noFlow.status).toBe(400);
    expect(await noFlow.text()).toContain("not started in this browser");
    const forged = await fetch(`${service.url}/auth/oidc/callback?code=abc&state=def`, {
      headers: { cookie: "ct_oidc=eyJzdGF0ZSI6ImRlZiJ9.forged-signature" },
      redirect: "manual",
    });
    expect(forged.status).toBe(400);
    const post = await fetch(`${service.url}/auth/oidc/start`, { method: "POST", redirect: "manual" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET");
    for (const path of ["/auth/oidc/elsewhere", "/constructor", "/__proto__", "/auth/oidc/start/"]) {
      expect((await fetch(`${service.url}${path}`, { redirect: "manual" })).status).toBe(404);
    }
    const start = await fetch(`${service.url}/auth/oidc/start`, { redirect: "manual" });
    expect(start.status).toBe(302);
    const flowCookie = start.headers.getSetCookie().find((c) => c.startsWith("ct_oidc="))!;
    expect(flowCookie).toMatch(/HttpOnly/);
    expect(flowCookie).toMatch(/SameSite=Lax/);
    expect(flowCookie).toMatch(/Path=\/auth\/oidc\//);
    // The provider answering with an error (the person declined) is a refusal page, not a crash.
    const state = new URL(start.headers.get("location")!).searchParams.get("state")!;
    const declined = await fetch(
      `${service.url}/auth/oidc/callback?${new URLSearchParams({ error: "access_denied", state, iss: provider.issuer })}`,
      {
        headers: { cookie: flowCookie.split(";")[0]! },
        redirect: "manual",
      },
    );
    expect(declined.status).toBe(403);
    expect(await declined.text()).toContain("refused the sign-in (access_denied");
    expect((await fetch(`${service.url}/readyz`)).status).toBe(200);
  });

  it("refuses to start with an incomplete or insecure configuration", () => {
    const missing = runCliRaw(["serve", "--port", "0", "--data-dir", tempDir(), "--oidc-issuer", "https://id.example.com"]);
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain("OIDC_ISSUER needs OIDC_CLIENT_ID and OIDC_CLIENT_SECRET");
    const plain = runCliRaw([
      "serve",
      "--port",
      "0",
      "--data-dir",
      tempDir(),
      ...["--oidc-issuer", "http://id.example.com", "--oidc-client-id", "x", "--oidc-client-secret", "y"],
    ]);
    expect(plain.status).not.toBe(0);
    expect(plain.stderr).toContain("OIDC_ISSUER: expected an https:// URL");
  });
});
