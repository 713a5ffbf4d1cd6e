import { beforeAll, describe, expect, it } from "vitest";
import { DashboardClient, type Json } from "../dashboard/dashboard-client.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";

/** Roles enforced by the server over real sockets: what docs/teams.md's matrix says, and the rules beside it. */
describe("roles", () => {
  let service: TestService;
  let alice: DashboardClient;
  let bob: DashboardClient;
  let organizationId: string;
  let project: string;
  let bobId: string;
  let aliceId: string;

  const tokenOf = (url: string) => url.slice(url.lastIndexOf("/") + 1);

  beforeAll(async () => {
    service = await startTestService();
    alice = new DashboardClient(service.url);
    await alice.signUp("alice@example.com");
    project = alice.project;
    organizationId = ((await alice.ok("TeamService/ListOrganizations")).organizations as Json[])[0]!.organization.id;
    const key = (await alice.ok("AccountService/CreateKey", { name: "prod" })).plaintext as string;
    expect((await postTrace(service.url, traceBody(key), { key })).status).toBe(202);
    const invitation = await alice.ok("TeamService/CreateInvitation", { organizationId, email: "bob@example.com", role: "ROLE_VIEWER" });
    expect(invitation.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/app\/invite\/[A-Za-z0-9_-]{43}$/);
    expect(invitation.mailed ?? false).toBe(false);
    bob = new DashboardClient(service.url);
    await bob.signUp("bob@example.com");
    const accepted = await bob.ok("TeamService/AcceptInvitation", { token: tokenOf(invitation.url) });
    expect(accepted).toMatchObject({ organization: { id: organizationId }, role: "ROLE_VIEWER" });
    bobId = ((await bob.ok("AuthService/GetSession")).session as Json).userId;
    aliceId = ((await alice.ok("AuthService/GetSession")).session as Json).userId;
  });

  it("a viewer reads the project's traces and keys, and the server refuses them a key", async () => {
    const traces = await bob.ok("QueryService/ListTraces", { projectId: project });
    expect(traces.page.traces).toHaveLength(1);
    expect(((await bob.ok("AccountService/ListKeys", { projectId: project })).keys as Json[]).map((k) => k.name)).toEqual(["prod"]);
    const refused = await bob.call("AccountService/CreateKey", { projectId: project, name: "mine" });
    expect(refused.body).toMatchObject({ code: "permission_denied", message: "your role is viewer; this needs member or above" });
  });

  it.each([
    ["TeamService/CreateInvitation", () => ({ organizationId, email: "eve@example.com", role: "ROLE_ADMIN" })],
    ["TeamService/ListInvitations", () => ({ organizationId })],
    ["TeamService/SetMemberRole", () => ({ organizationId, userId: bobId, role: "ROLE_ADMIN" })],
    ["TeamService/UpdateProject", () => ({ projectId: project, retentionDays: 1 })],
    ["TeamService/UpdateOrganization", () => ({ organizationId, name: "mine now" })],
    ["TeamService/ListAuditLog", () => ({ organizationId })],
    ["TeamService/DeleteProject", () => ({ projectId: project })],
    ["TeamService/DeleteOrganization", () => ({ organizationId })],
    ["TeamService/TransferOwnership", () => ({ organizationId, userId: bobId })],
    ["AccountService/RevokeKey", () => ({ projectId: project, keyId: "key_x" })],
  ])("a viewer calling %s is refused by the server", async (method, body) => {
    expect((await bob.call(method, body())).body.code).toBe("permission_denied");
  });

  it("an admin cannot touch an owner, and the last owner can neither be demoted nor leave", async () => {
    await alice.ok("TeamService/SetMemberRole", { organizationId, userId: bobId, role: "ROLE_ADMIN" });
    expect((await bob.call("TeamService/SetMemberRole", { organizationId, userId: aliceId, role: "ROLE_VIEWER" })).body).toMatchObject({
      code: "permission_denied",
      message: "only owners make or unmake owners",
    });
    expect((await bob.call("TeamService/SetMemberRole", { organizationId, userId: bobId, role: "ROLE_OWNER" })).body.code).toBe("permission_denied");
    expect((await bob.call("TeamService/RemoveMember", { organizationId, userId: aliceId })).body.code).toBe("permission_denied");
    expect((await bob.call("TeamService/CreateInvitation", { organizationId, email: "o@example.com", role: "ROLE_OWNER" })).body.code).toBe("permission_denied");
    // An admin does invite, and the audit log is theirs to read.
    expect((await bob.call("TeamService/CreateInvitation", { organizationId, email: "carol@example.com", role: "ROLE_MEMBER" })).status).toBe(200);

    expect((await alice.call("TeamService/SetMemberRole", { organizationId, userId: aliceId, role: "ROLE_ADMIN" })).body).toMatchObject({
      code: "failed_precondition",
      message: "an organization must keep at least one owner",
    });
    expect((await alice.call("TeamService/RemoveMember", { organizationId, userId: aliceId })).body.code).toBe("failed_precondition");
    const members = (await alice.ok("TeamService/ListMembers", { organizationId })).members as Json[];
    expect(members.map((m) => [m.email, m.role])).toEqual([
      ["alice@example.com", "ROLE_OWNER"],
      ["bob@example.com", "ROLE_ADMIN"],
    ]);
  });

  it("a demoted member loses the access on their next call, and a removed one loses everything, session and all", async () => {
    await alice.ok("TeamService/SetMemberRole", { organizationId, userId: bobId, role: "ROLE_VIEWER" });
    expect((await bob.call("TeamService/ListAuditLog", { organizationId })).body.code).toBe("permission_denied");
    await alice.ok("TeamService/RemoveMember", { organizationId, userId: bobId });
    const after = await bob.call("QueryService/ListTraces", { projectId: project });
    expect(after.body.code).toBe("not_found");
    // Bob's own organization is still his.
    expect((await bob.call("QueryService/ListTraces", {})).status).toBe(200);
  });

  it("the audit log records keys, invitations, joins, role changes and removals, newest first", async () => {
    const entries = (await alice.ok("TeamService/ListAuditLog", { organizationId })).entries as Json[];
    expect(entries.map((e) => e.action).reverse()).toEqual([
      "key.create",
      "invitation.create",
      "member.join",
      "member.role",
      "invitation.create",
      "member.role",
      "member.remove",
    ]);
    expect(entries.at(-1)).toMatchObject({ actor: "alice@example.com", projectId: project, details: { scope: "ingest", name: "prod" } });
    expect(entries[0]).toMatchObject({ actor: "alice@example.com", target: "bob@example.com", details: { role: "viewer" } });
  });
});
