import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DashboardClient, type Json } from "../dashboard/dashboard-client.js";
import { freePort } from "../support/free-port.js";
import { startMailpit, type Mailpit } from "../support/mailpit.js";
import { startTestService, type TestService } from "../support/test-service.js";

const organizationOf = async (client: DashboardClient): Promise<string> =>
  ((await client.ok("TeamService/ListOrganizations")).organizations as Json[])[0]!.organization.id;

/** SMTP_URL set: CreateInvitation mails the link, through a real Mailpit, and the mailed link lets the invitee in. */
describe("invitation mail", () => {
  let mailpit: Mailpit;
  const services: TestService[] = [];
  const start = async (...args: Parameters<typeof startTestService>) => {
    const service = await startTestService(...args);
    services.push(service);
    return service;
  };

  beforeAll(async () => {
    mailpit = await startMailpit();
  });
  afterAll(async () => {
    mailpit.close();
    for (const service of services) await service.close(1000);
  });

  it("mails the link to the invited address, and the link from the mail signs the invitee up into the organization", async () => {
    const service = await start({ smtpUrl: mailpit.smtpUrl, smtpFrom: "calltrace <invites@example.com>", publicUrl: "https://calltrace.example.com/" });
    const alice = new DashboardClient(service.url);
    await alice.signUp("alice@example.com");
    const organizationId = await organizationOf(alice);
    const created = await alice.ok("TeamService/CreateInvitation", { organizationId, email: "Bob@Example.com", role: "ROLE_MEMBER" });
    expect(created.mailed).toBe(true);
    // Links point at PUBLIC_URL, not at the address the admin's request came to.
    expect(created.url).toMatch(/^https:\/\/calltrace\.example\.com\/app\/invite\/[A-Za-z0-9_-]{43}$/);

    const [message] = (await mailpit.messages()).filter((m) => m.To[0]?.Address === "bob@example.com");
    expect(message).toMatchObject({ Subject: "alice@example.com invites you to alice@example.com on calltrace", From: { Address: "invites@example.com" } });
    const text = await mailpit.text(message!.ID);
    expect(text).toContain("as member");
    const link = /https:\/\/\S+\/app\/invite\/[A-Za-z0-9_-]{43}/.exec(text)?.[0];
    expect(link).toBe(created.url);

    const token = link!.slice(link!.lastIndexOf("/") + 1);
    const bob = new DashboardClient(service.url);
    expect(await bob.ok("TeamService/GetInvitation", { token })).toMatchObject({ email: "bob@example.com", role: "ROLE_MEMBER" });
    const signedUp = await bob.ok("AuthService/SignUp", { email: "bob@example.com", password: "correct horse battery", invitationToken: token });
    expect(signedUp.session.accountId).toBe(alice.project);
    const organizations = (await bob.ok("TeamService/ListOrganizations")).organizations as Json[];
    expect(organizations.map((o) => [o.organization.id, o.role])).toEqual([[organizationId, "ROLE_MEMBER"]]);
  });

  it("a mail that cannot be sent fails CreateInvitation with UNAVAILABLE and leaves no usable invitation", async () => {
    const nobodyListens = await freePort();
    const service = await start({ smtpUrl: `smtp://127.0.0.1:${nobodyListens}` });
    const alice = new DashboardClient(service.url);
    await alice.signUp("alice@example.com");
    const organizationId = await organizationOf(alice);
    const refused = await alice.call("TeamService/CreateInvitation", { organizationId, email: "bob@example.com", role: "ROLE_VIEWER" });
    expect(refused.status).toBe(503);
    expect(refused.body.code).toBe("unavailable");
    expect(refused.body.message).toMatch(/^the invitation mail to bob@example\.com could not be sent \(.*ECONNREFUSED.*\); nothing was created, try again$/);
    expect(refused.body).not.toHaveProperty("url");
    expect((await alice.ok("TeamService/ListInvitations", { organizationId })).invitations ?? []).toEqual([]);
    const actions = ((await alice.ok("TeamService/ListAuditLog", { organizationId })).entries as Json[] | undefined ?? []).map((e) => e.action);
    expect(actions).not.toContain("invitation.create");
  });

  it("refuses to start with an SMTP_URL that is not smtp:// or smtps://", async () => {
    await expect(startTestService({ smtpUrl: "http://127.0.0.1:1025" })).rejects.toThrow(
      "SMTP_URL: expected smtp://host:port or smtps://host:port, with user:pass@ if the server wants them",
    );
  });
});
