import { readFileSync } from "node:fs";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seriousAxeViolations } from "../support/axe.js";
import { launchBrowser, openDashboardBrowser, projectApp, projectPage, signUpWithKey, type DashboardBrowser } from "../support/browser.js";
import { startMailpit, type Mailpit } from "../support/mailpit.js";
import { postTrace, traceBody } from "../support/test-service.js";

/** A Connect call made by hand from the page, with its session and CSRF token: what a forger, or a script, can do. */
async function callFromPage(page: Page, procedure: string, message: object): Promise<{ status: number; body: Record<string, unknown> }> {
  return page.evaluate(
    async ({ procedure, message }) => {
      const cookie = document.cookie
        .split(";")
        .map((c) => c.trim())
        .find((c) => c.startsWith("ct_csrf="));
      const res = await fetch(`/calltrace.v1.${procedure}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-csrf-token": decodeURIComponent(cookie?.slice("ct_csrf=".length) ?? "") },
        body: JSON.stringify(message),
      });
      return { status: res.status, body: await res.json() };
    },
    { procedure, message },
  );
}

const traceIds = (page: Page) =>
  page.locator("table.traces tbody tr[data-trace-id]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-trace-id")));

/**
 * Two people, two browsers, one project: the owner invites a viewer by a copied link, the viewer
 * signs up through it and sees the same traces, and the viewer's role is enforced by the server
 * (a forged CreateKey is refused), not only hidden by the page. Generous limits: the machine is shared.
 */
describe("a team in two real browsers", { timeout: 90_000 }, () => {
  let owner: DashboardBrowser;
  let service: DashboardBrowser["service"];
  let page: Page;
  let viewerContext: BrowserContext;
  let viewer: Page;
  let app = "";
  let projectId = "";
  let link = "";

  beforeAll(async () => {
    owner = await openDashboardBrowser();
    ({ service, page } = owner);
    await owner.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: service.url });
    const key = await signUpWithKey(page, service.url, "owner@example.com", "production");
    app = projectApp(page);
    projectId = decodeURIComponent(app.split("/").at(-2)!);
    for (const model of ["gpt-4o", "claude-sonnet-4", "gpt-4o-mini", "claude-sonnet-4"]) {
      expect((await postTrace(service.url, traceBody(key, { model, cost_usd: 0.01 }), { key })).status).toBe(202);
    }
    viewerContext = await launchBrowser();
    viewer = viewerContext.pages()[0] ?? (await viewerContext.newPage());
    viewer.setDefaultTimeout(20_000);
  }, 180_000);

  afterAll(async () => {
    await viewerContext?.close();
    await owner?.close();
  });

  it("the owner invites a viewer and copies the link, shown because no mail is set up", async () => {
    await page.goto(`${app}members`);
    await expect.poll(() => page.locator("tr[data-member='owner@example.com']").getAttribute("data-role")).toBe("owner");
    await page.fill("input[name=invite-email]", "viewer@example.com");
    await page.selectOption("select[name=invite-role]", { label: "viewer" });
    await page.getByRole("button", { name: "Invite", exact: true }).click();
    await expect.poll(() => page.locator("[data-invitation-link]").textContent()).toContain("Mail is not set up on this server");
    await page.getByRole("button", { name: "Copy link" }).click();
    link = await page.evaluate(() => navigator.clipboard.readText());
    expect(link).toMatch(new RegExp(`^${service.url}/app/invite/[A-Za-z0-9_-]{43}$`));
    expect(await page.locator("input[name=invitation-url]").inputValue()).toBe(link);
    await expect.poll(() => page.locator("tr[data-invitation='viewer@example.com'] td").nth(1).textContent()).toBe("viewer");
    expect(await seriousAxeViolations(page)).toEqual([]);
  });

  it("the viewer opens the link in another browser, signs up with the invited address and lands in the same project", async () => {
    await viewer.goto(link);
    await expect.poll(() => viewer.locator("[data-invitation-summary] [data-organization]").textContent()).toBe("owner@example.com");
    expect(await viewer.locator("[data-invitation-summary] [data-role]").textContent()).toBe("viewer");
    expect(await viewer.locator("input[name=email]").inputValue()).toBe("viewer@example.com");
    expect(await seriousAxeViolations(viewer)).toEqual([]);
    await viewer.fill("input[name=password]", "another horse battery");
    await viewer.getByRole("button", { name: "Create account" }).click();
    await viewer.waitForURL(projectPage);
    expect(projectApp(viewer)).toBe(app);
  });

  it("a link the owner shares opens the same view, with the same traces, for the viewer", async () => {
    const shared = `${app}traces?range=all&model=claude-sonnet-4`;
    await page.goto(shared);
    await expect.poll(async () => (await traceIds(page)).length).toBe(2);
    await viewer.goto(shared);
    await expect.poll(async () => (await traceIds(viewer)).length).toBe(2);
    expect(await traceIds(viewer)).toEqual(await traceIds(page));
    await viewer.goto(app);
    await expect.poll(() => viewer.locator("[data-tile=total-calls] strong").textContent()).toBe("4");
  });

  it("the viewer sees the keys but has no button to create, rename or revoke one, nor the audit log", async () => {
    await viewer.goto(`${app}settings`);
    await expect.poll(() => viewer.locator("tr[data-key-name=production] [data-scope]").textContent()).toBe("ingest");
    expect(await viewer.locator("[data-keys-read-only]").count()).toBe(1);
    expect(await viewer.getByRole("button", { name: "Create key" }).count()).toBe(0);
    expect(await viewer.getByRole("button", { name: /Revoke|Rename/ }).count()).toBe(0);
    expect(await viewer.getByRole("link", { name: "Audit log" }).count()).toBe(0);
    expect(await viewer.locator("input[name=project-name]").getAttribute("readonly")).not.toBeNull();
    await viewer.goto(`${app}members`);
    await expect.poll(() => viewer.locator("tr[data-member]").count()).toBe(2);
    expect(await viewer.locator("[data-section=invitations], [data-section=organization], [data-section=transfer]").count()).toBe(0);
    expect(await viewer.locator("select[name=member-role]").count()).toBe(0);
  });

  it("a CreateKey forged from the viewer's page is refused by the server; the same call from the owner's page works", async () => {
    const forged = await callFromPage(viewer, "AccountService/CreateKey", { name: "forged", projectId });
    expect(forged.status).toBe(403);
    expect(forged.body.code).toBe("permission_denied");
    const allowed = await callFromPage(page, "AccountService/CreateKey", { name: "forged", projectId });
    expect(allowed.status).toBe(200);
    expect((allowed.body.key as { name: string }).name).toBe("forged");
    // Only the owner's key was made.
    await page.goto(`${app}settings`);
    await expect.poll(() => page.locator("tr[data-key-name=forged]").count()).toBe(1);
    await viewer.goto(`${app}settings`);
    await expect.poll(() => viewer.locator("tr[data-key-name]").count()).toBe(2);
  });

  it("the owner makes the viewer a member, who may then create keys with a scope", async () => {
    await page.goto(`${app}members`);
    await expect.poll(() => page.locator("tr[data-member='viewer@example.com']").getAttribute("data-role")).toBe("viewer");
    await page.selectOption("select[aria-label='Role of viewer@example.com']", { label: "member" });
    await expect.poll(() => page.locator("tr[data-member='viewer@example.com']").getAttribute("data-role")).toBe("member");
    await expect
      .poll(async () => {
        await viewer.goto(`${app}settings`);
        await viewer.locator("tr[data-key-name=production]").waitFor();
        return viewer.getByRole("button", { name: "Create key" }).count();
      })
      .toBe(1);
    await viewer.fill("input[name=key-name]", "notebook");
    await viewer.selectOption("select[name=key-scope]", { value: "2" });
    await viewer.getByRole("button", { name: "Create key" }).click();
    expect(await viewer.locator("#new-key").inputValue()).toMatch(/^ct_/);
    await expect.poll(() => viewer.locator("tr[data-key-name=notebook] [data-scope]").textContent()).toBe("read");
  });

  it("someone with an account of their own logs in through a link, accepts it, and switches between both organizations", async () => {
    const context = await launchBrowser();
    try {
      const member = context.pages()[0] ?? (await context.newPage());
      member.setDefaultTimeout(20_000);
      await member.goto(`${service.url}/app/`);
      await member.getByRole("button", { name: "Sign up" }).click();
      await member.fill("input[name=email]", "member@example.com");
      await member.fill("input[name=password]", "a third horse battery");
      await member.getByRole("button", { name: "Create account" }).click();
      await member.waitForURL(projectPage);
      const own = projectApp(member);
      await member.getByRole("button", { name: "Log out" }).click();

      await page.goto(`${app}members`);
      await page.fill("input[name=invite-email]", "member@example.com");
      await page.getByRole("button", { name: "Invite", exact: true }).click();
      const invitation = await page.locator("input[name=invitation-url]").inputValue();

      await member.goto(invitation);
      await expect.poll(() => member.locator("[data-invitation-summary] [data-role]").textContent()).toBe("member");
      await member.getByRole("button", { name: "Log in", pressed: false }).click();
      expect(await member.locator("input[name=email]").inputValue()).toBe("member@example.com");
      await member.fill("input[name=password]", "a third horse battery");
      await member.locator("form button[type=submit]").click();
      await member.getByRole("button", { name: "Accept and join owner@example.com" }).click();
      await member.waitForURL(app);
      // The picker fills in once the organizations have loaded, after the URL changes.
      await expect
        .poll(async () => (await member.locator("select[name=project] option").allTextContents()).sort())
        .toEqual(["member@example.com / Default", "owner@example.com / Default"]);

      // Switching project keeps the page.
      await member.goto(`${app}traces`);
      await member.selectOption("select[name=project]", { label: "member@example.com / Default" });
      await member.waitForURL(`${own}traces`);
      // /app/ opens the project used last (this browser remembers it), not the first one.
      await member.goto(`${service.url}/app/`);
      await member.waitForURL(own);
      await member.selectOption("select[name=project]", { label: "owner@example.com / Default" });
      await member.waitForURL(app);
      await member.goto(`${service.url}/app/`);
      await member.waitForURL(app);
    } finally {
      await context.close();
    }
  });

  it("a revoked invitation's link no longer opens; the audit log records the invitations and keys", async () => {
    await page.goto(`${app}members`);
    await page.fill("input[name=invite-email]", "late@example.com");
    await page.getByRole("button", { name: "Invite", exact: true }).click();
    const revokedLink = await page.locator("input[name=invitation-url]").inputValue();
    await page.getByRole("button", { name: "Revoke the invitation of late@example.com" }).click();
    await expect.poll(() => page.locator("tr[data-invitation='late@example.com']").count()).toBe(0);
    await viewer.goto(revokedLink);
    await expect.poll(() => viewer.locator("[data-invitation] .error").textContent()).toContain("Could not load the invitation");

    await page.getByRole("link", { name: "Audit log" }).click();
    await expect.poll(() => page.locator("tr[data-audit-action]").count()).toBeGreaterThan(0);
    const actions = await page.locator("tr[data-audit-action]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-audit-action")));
    expect(actions).toEqual(expect.arrayContaining(["invitation.create", "invitation.revoke", "member.join", "key.create", "member.role"]));
  });

  it("the audit log pages back through older entries and forward again, and downloads whole", async () => {
    const { body } = await callFromPage(page, "TeamService/ListOrganizations", {});
    const memberships = body.organizations as { organization: { id: string }; projects: { id: string }[] }[];
    const organizationId = memberships.find((m) => m.projects.some((p) => p.id === projectId))!.organization.id;
    for (let i = 0; i < 50; i++) {
      const made = await callFromPage(page, "TeamService/CreateInvitation", {
        organizationId,
        email: `bulk${i}@example.com`,
        role: "ROLE_VIEWER",
      });
      expect(made.status).toBe(200);
    }
    const shown = () => page.locator("tr[data-audit-id]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-audit-id")));
    await page.goto(`${app}audit`);
    await expect.poll(async () => (await shown()).length).toBe(50);
    const newest = await shown();
    expect(await page.locator("tr[data-audit-action]").first().getAttribute("data-audit-action")).toBe("invitation.create");
    await page.getByRole("button", { name: "Older →" }).click();
    // While the older page loads, the table is empty: wait for its rows.
    await expect.poll(async () => ((await shown())[0] ?? newest[0]) !== newest[0]).toBe(true);
    const older = await shown();
    expect(older.length).toBeGreaterThan(0);
    expect(older.length).toBeLessThan(50);
    expect(older.filter((id) => newest.includes(id))).toEqual([]);
    expect(await page.getByRole("button", { name: "Older →" }).isDisabled()).toBe(true);
    await page.getByRole("button", { name: "← Newer" }).click();
    await expect.poll(shown).toEqual(newest);

    // The download is the whole log, newest first: both pages, then nothing more.
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: "Download JSONL" }).click()]);
    const lines = readFileSync((await download.path())!, "utf8")
      .trim()
      .split("\n");
    expect(lines.map((line) => (JSON.parse(line) as { id: string }).id)).toEqual([...newest, ...older]);
  });

  it("the owner renames the project and sets its retention and time zone; makes a second project and deletes it", async () => {
    await page.goto(`${app}settings`);
    await page.fill("input[name=project-name]", "Production");
    await page.fill("input[name=retention-days]", "30");
    await page.fill("input[name=time-zone]", "Europe/Paris");
    await page.getByRole("button", { name: "Save project" }).click();
    await expect.poll(() => page.locator("[data-section=project] [role=status]").textContent()).toBe("Saved.");
    expect(await page.locator("select[name=project] option:checked").textContent()).toBe("owner@example.com / Production");
    await page.reload();
    await expect.poll(() => page.locator("input[name=retention-days]").inputValue()).toBe("30");
    expect(await page.locator("input[name=time-zone]").inputValue()).toBe("Europe/Paris");
    await page.fill("input[name=time-zone]", "Mars/Olympus");
    await page.getByRole("button", { name: "Save project" }).click();
    await expect
      .poll(() => page.locator("[data-section=project] [role=alert]").textContent())
      .toContain('"Mars/Olympus" is not an IANA time zone');

    await page.locator(".new-menu summary").click();
    await page.fill("input[name=new-name]", "Staging");
    await page.getByRole("button", { name: "Create project" }).click();
    await expect.poll(() => page.locator("select[name=project] option:checked").textContent()).toBe("owner@example.com / Staging");
    const staging = projectApp(page);
    expect(staging).not.toBe(app);
    expect(page.url()).toBe(`${staging}settings`);
    // Another project: none of the first one's keys.
    await expect.poll(() => page.getByText("No keys yet: create one above.").count()).toBe(1);
    await page.locator("[data-section=delete-project] summary").click();
    await page.fill("input[name=delete-project-name]", "Staging");
    await page.getByRole("button", { name: "Delete project and its data" }).click();
    await page.waitForURL(app);
    await expect.poll(() => page.locator("select[name=project] option").allTextContents()).toEqual(["owner@example.com / Production"]);
  });

  it("the owner makes a second organization and deletes it by typing its name; the picker no longer lists it", async () => {
    await page.goto(`${app}members`);
    await page.locator(".new-menu summary").click();
    await page.getByRole("radio", { name: "Organization" }).check();
    await page.fill("input[name=new-name]", "Sandbox");
    await page.getByRole("button", { name: "Create organization" }).click();
    await expect.poll(() => page.locator("select[name=project] option:checked").textContent()).toBe("Sandbox / Default");
    const sandbox = projectApp(page);
    await page.goto(`${sandbox}members`);
    await page.locator("[data-section=delete-organization] summary").click();
    const remove = page.getByRole("button", { name: "Delete organization and all its data" });
    await page.fill("input[name=delete-organization-name]", "Sandbo");
    expect(await remove.isDisabled()).toBe(true);
    await page.fill("input[name=delete-organization-name]", "Sandbox");
    await remove.click();
    await page.waitForURL(app);
    await expect.poll(() => page.locator("select[name=project] option").allTextContents()).toEqual(["owner@example.com / Production"]);
    // Its project is gone on the server, not only from the picker.
    const { body } = await callFromPage(page, "TeamService/ListOrganizations", {});
    expect((body.organizations as { organization: { name: string } }[]).map((o) => o.organization.name)).toEqual(["owner@example.com"]);
  });

  it("the owner removes a member, hands the ownership to another and leaves; the new owner is the only one", async () => {
    await page.goto(`${app}members`);
    await page.getByRole("button", { name: "Remove… member@example.com" }).click();
    await page.getByRole("button", { name: "Yes, remove" }).click();
    await expect.poll(() => page.locator("tr[data-member='member@example.com']").count()).toBe(0);

    await page.selectOption("select[name=new-owner]", { label: "viewer@example.com" });
    await page.getByRole("button", { name: "Transfer ownership…" }).click();
    await page.getByRole("button", { name: "Yes, transfer" }).click();
    await expect.poll(() => page.locator("tr[data-member='viewer@example.com']").getAttribute("data-role")).toBe("owner");
    await expect.poll(() => page.locator("tr[data-member='owner@example.com']").getAttribute("data-role")).toBe("admin");
    // The rows come from the members list, the section from the owner's own membership, reloaded after it.
    await expect.poll(() => page.locator("[data-section=transfer]").count()).toBe(0);

    await page.getByRole("button", { name: "Leave organization…" }).click();
    await page.getByRole("button", { name: "Yes, leave" }).click();
    await expect.poll(() => page.locator("[data-no-project] h1").textContent()).toBe("No project yet");
    await page.goto(`${app}traces`);
    await expect.poll(() => page.locator("[data-not-found] h1").textContent()).toBe("Project not found");

    await viewer.goto(`${app}members`);
    await expect.poll(() => viewer.locator("tr[data-member]").count()).toBe(1);
    expect(await viewer.locator("tr[data-member='viewer@example.com']").getAttribute("data-role")).toBe("owner");
    expect(await viewer.getByRole("button", { name: "Leave organization…" }).count()).toBe(0);
    expect(await viewer.getByText("You are its only owner").count()).toBe(1);
    expect(await viewer.getByRole("link", { name: "Audit log" }).count()).toBe(1);
  });
});

describe("an invitation mailed through a real SMTP server (Mailpit), in a real browser", { timeout: 90_000 }, () => {
  let mailpit: Mailpit;
  let browser: DashboardBrowser;

  beforeAll(async () => {
    mailpit = await startMailpit();
    browser = await openDashboardBrowser(["--smtp-url", mailpit.smtpUrl]);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    mailpit?.close();
  });

  it("says the link was mailed, and the link shown to copy is the mailed one", async () => {
    const { page, service } = browser;
    await signUpWithKey(page, service.url, "alice@example.com", "production");
    await page.goto(`${projectApp(page)}members`);
    await page.fill("input[name=invite-email]", "bob@example.com");
    await page.getByRole("button", { name: "Invite", exact: true }).click();
    await expect
      .poll(() => page.locator("[data-invitation-link] [data-mailed]").textContent())
      .toBe("It was sent to bob@example.com by mail; you can also copy the link below.");
    const shown = await page.locator("input[name=invitation-url]").inputValue();
    expect(shown).toMatch(/\/app\/invite\/[A-Za-z0-9_-]{43}$/);
    const [message] = (await mailpit.messages()).filter((m) => m.To[0]?.Address === "bob@example.com");
    expect(await mailpit.text(message!.ID)).toContain(shown);
  });

  it("an admin renames the organization and sets its single sign-on join domain and role", async () => {
    const { page } = browser;
    await page.goto(`${projectApp(page)}members`);
    await expect.poll(() => page.locator("select[name=join-role] option").allTextContents()).toEqual(["admin", "member", "viewer"]);
    await page.fill("input[name=organization-name]", "Acme");
    await page.fill("input[name=join-domain]", "Acme.test");
    await page.selectOption("select[name=join-role]", { label: "member" });
    await page.getByRole("button", { name: "Save organization" }).click();
    await expect.poll(() => page.locator("[data-section=organization] [role=status]").textContent()).toBe("Saved.");
    expect(await page.locator("select[name=project] option:checked").textContent()).toBe("Acme / Default");
    await page.reload();
    await expect.poll(() => page.locator("input[name=join-domain]").inputValue()).toBe("acme.test");
    expect(await page.locator("select[name=join-role] option:checked").textContent()).toBe("member");
    await page.fill("input[name=join-domain]", "not a domain");
    await page.getByRole("button", { name: "Save organization" }).click();
    await expect.poll(() => page.locator("[data-section=organization] [role=alert]").textContent()).toContain("join_domain");
  });
});
