import type { Page, Response } from "playwright-core";
import { expect, onTestFinished } from "vitest";
import { DashboardClient, type Json } from "../dashboard/dashboard-client.js";
import { launchBrowser } from "../support/browser.js";
import { type ServiceProcess, startServiceProcess } from "../support/cli.js";
import { freePort } from "../support/free-port.js";
import { tempDir } from "../support/temp-dir.js";
import { startTestProvider, type TestProvider } from "./test-provider.js";

/** A real OpenID provider (oidc-provider) and `calltrace serve` processes configured to sign in with it. */
export interface SsoServices {
  provider: TestProvider;
  services: ServiceProcess[];
  close(): Promise<void>;
}

/** Starts the provider, then one service per entry (its extra flags and environment), each registered at the provider. */
export async function startSsoServices(specs: Array<{ args?: string[]; env?: NodeJS.ProcessEnv }>): Promise<SsoServices> {
  const ports: number[] = [];
  for (const _ of specs) ports.push(await freePort());
  const provider = await startTestProvider(
    await freePort(),
    ports.map((port) => `http://127.0.0.1:${port}/auth/oidc/callback`),
  );
  const services: ServiceProcess[] = [];
  const close = async () => {
    for (const s of services) {
      s.child.kill("SIGTERM");
      await s.exited;
    }
    await provider.close();
  };
  try {
    for (const [i, spec] of specs.entries()) {
      const oidc = ["--oidc-issuer", provider.issuer, "--oidc-client-id", provider.clientId, "--oidc-client-secret", provider.clientSecret];
      services.push(
        await startServiceProcess(["--port", String(ports[i]), "--data-dir", tempDir(), ...oidc, ...(spec.args ?? [])], spec.env),
      );
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { provider, services, close };
}

/** A fresh page in its own cookie jar, so each test is another person's browser. */
export async function freshPage(): Promise<Page> {
  const context = await launchBrowser();
  // The provider's developer pages load a web font; there is no internet here.
  await context.route(/fonts\.googleapis\.com/, (route) => route.abort());
  onTestFinished(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  return page;
}

/** Goes through the provider's log-in and consent pages as `login`. */
export async function logInAtProvider(page: Page, login: string): Promise<void> {
  await page.fill("input[name=login]", login);
  await page.fill("input[name=password]", "any password");
  await page.getByRole("button", { name: "Sign-in" }).click();
  await page.getByRole("button", { name: "Continue" }).click();
}

/** Logs in at the provider as `login`; answers the response to the provider's redirect back to calltrace. */
export async function signInAtProvider(page: Page, login: string): Promise<Response> {
  const callback = page.waitForResponse((r) => r.url().includes("/auth/oidc/callback"));
  await logInAtProvider(page, login);
  return callback;
}

/**
 * Logs in at the provider as `login` while the browser withholds its flow cookie, so calltrace
 * refuses the callback without using the code; then gives the cookie back. Answers the callback
 * URL, whose code is still unused. (Chromium cannot stop a redirect the provider sends.)
 */
export async function callbackUrlFor(page: Page, baseUrl: string, login: string): Promise<URL> {
  const context = page.context();
  const flow = (await context.cookies(`${baseUrl}/auth/oidc/callback`)).filter((c) => c.name === "ct_oidc");
  expect(flow).toHaveLength(1);
  await context.clearCookies({ name: "ct_oidc" });
  const withheld = await signInAtProvider(page, login);
  expect(withheld.status()).toBe(400);
  await context.addCookies(flow);
  return new URL(withheld.url());
}

/** Calls the dashboard's RPCs with the browser's cookies, as the web app does. */
export async function clientOf(page: Page, baseUrl: string): Promise<DashboardClient> {
  const client = new DashboardClient(baseUrl);
  for (const cookie of await page.context().cookies(baseUrl)) client.cookies.set(cookie.name, cookie.value);
  return client;
}

export async function auditOf(client: DashboardClient, organizationId: string): Promise<Json[]> {
  return ((await client.ok("TeamService/ListAuditLog", { organizationId })).entries ?? []) as Json[];
}

/**
 * An organization with join domain `acme-corp.com` and join role viewer; Bob signs in from that
 * domain with single sign-on and becomes its viewer, with no organization of his own.
 */
export async function domainJoin(baseUrl: string): Promise<void> {
  const admin = new DashboardClient(baseUrl);
  await admin.signUp("admin@acme-corp.com");
  const [membership] = (await admin.ok("TeamService/ListOrganizations")).organizations as Json[];
  const organizationId = membership!.organization.id as string;
  await admin.ok("TeamService/UpdateOrganization", { organizationId, joinDomain: "acme-corp.com", joinRole: "ROLE_VIEWER" });

  const page = await freshPage();
  await page.goto(`${baseUrl}/auth/oidc/start`);
  expect((await signInAtProvider(page, "bob@acme-corp.com")).status()).toBe(302);
  await page.waitForURL(`${baseUrl}/app/`);
  await expect.poll(() => page.locator(".who .email").textContent()).toBe("bob@acme-corp.com");

  const members = (await admin.ok("TeamService/ListMembers", { organizationId })).members as Json[];
  expect(members.find((m) => m.email === "bob@acme-corp.com")?.role).toBe("ROLE_VIEWER");
  // Bob joined the domain's organization, so he has no organization of his own.
  const bob = await clientOf(page, baseUrl);
  const bobs = (await bob.ok("TeamService/ListOrganizations")).organizations as Json[];
  expect(bobs.map((o) => [o.organization.id, o.role])).toEqual([[organizationId, "ROLE_VIEWER"]]);
  // A viewer is refused a key by the server.
  expect((await bob.call("AccountService/CreateKey", { name: "nope", projectId: bobs[0]!.projects[0].id })).status).toBe(403);
  const audit = (await auditOf(admin, organizationId)).map((e) => ({ action: e.action, actor: e.actor, target: e.target }));
  expect(audit).toContainEqual({ action: "member.join", actor: "sso", target: "bob@acme-corp.com" });
  expect(audit).toContainEqual({ action: "sso.sign_in", actor: "bob@acme-corp.com", target: "bob@acme-corp.com" });
}
