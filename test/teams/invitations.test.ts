import { beforeAll, describe, expect, it } from "vitest";
import { hashPassword } from "../../src/dashboard/password-hash.js";
import { invitationTokenHash } from "../../src/teams/invitations.js";
import { DashboardClient, type Json } from "../dashboard/dashboard-client.js";
import { startTestService, type TestService } from "../support/test-service.js";

const password = "correct horse battery";
const tokenOf = (url: string) => url.slice(url.lastIndexOf("/") + 1);

/** Invitation links over real sockets: single use, expiry, revocation, the invited address only, and throttled guessing. */
describe("invitations", () => {
  let service: TestService;
  let alice: DashboardClient;
  let organizationId: string;

  const invite = async (email: string, role = "ROLE_MEMBER") =>
    tokenOf((await alice.ok("TeamService/CreateInvitation", { organizationId, email, role })).url as string);
  const signUpWith = (client: DashboardClient, email: string, invitationToken: string) =>
    client.call("AuthService/SignUp", { email, password, invitationToken });
  /** Whether `email` has an account: a log-in with its password works. */
  const exists = async (email: string) => (await new DashboardClient(service.url).call("AuthService/LogIn", { email, password })).status === 200;
  const organizationsOf = async (client: DashboardClient) =>
    ((await client.ok("TeamService/ListOrganizations")).organizations as Json[]).map((o) => [o.organization.id, o.role]);

  beforeAll(async () => {
    // Each sign-up counts against the per-address limit; the brute-force test names its own address.
    service = await startTestService({ signupMaxPerAddress: 100, loginMaxPerAddress: 30, trustProxy: true });
    alice = new DashboardClient(service.url);
    await alice.signUp("alice@example.com");
    organizationId = ((await alice.ok("TeamService/ListOrganizations")).organizations as Json[])[0]!.organization.id;
  });

  it("signing up with an invitation joins the inviting organization with its role, and makes no organization of one's own", async () => {
    const token = await invite("bob@example.com", "ROLE_VIEWER");
    const bob = new DashboardClient(service.url);
    const answer = await signUpWith(bob, "bob@example.com", token);
    expect(answer.status).toBe(200);
    expect((answer.body as Json).session.accountId).toBe(alice.project);
    expect(await organizationsOf(bob)).toEqual([[organizationId, "ROLE_VIEWER"]]);
    // The link is used: neither a second accept nor a second sign-up gets in.
    expect((await bob.call("TeamService/AcceptInvitation", { token })).body.code).toBe("not_found");
    const again = await signUpWith(new DashboardClient(service.url), "bob2@example.com", token);
    expect(again.body.code).toBe("not_found");
    expect(await exists("bob2@example.com")).toBe(false);
    const entries = (await alice.ok("TeamService/ListAuditLog", { organizationId })).entries as Json[];
    expect(entries[0]).toMatchObject({ action: "member.join", actor: "bob@example.com", details: { role: "viewer" } });
  });

  it("an invitation used by signing in is used: a second AcceptInvitation answers NOT_FOUND and changes nothing", async () => {
    const token = await invite("carol@example.com", "ROLE_ADMIN");
    const carol = new DashboardClient(service.url);
    await carol.signUp("carol@example.com");
    expect(await carol.ok("TeamService/AcceptInvitation", { token })).toMatchObject({ role: "ROLE_ADMIN" });
    const second = await carol.call("TeamService/AcceptInvitation", { token });
    expect(second.body).toMatchObject({ code: "not_found" });
    expect((await carol.call("TeamService/GetInvitation", { token })).body.code).toBe("not_found");
    expect((await organizationsOf(carol)).filter(([id]) => id === organizationId)).toEqual([[organizationId, "ROLE_ADMIN"]]);
  });

  it("signing up again with an existing account's password and an invitation logs in and joins", async () => {
    const henry = new DashboardClient(service.url);
    await henry.signUp("henry@example.com");
    const token = await invite("henry@example.com", "ROLE_VIEWER");
    const again = new DashboardClient(service.url);
    expect((await signUpWith(again, "henry@example.com", token)).status).toBe(200);
    expect((await organizationsOf(again)).filter(([id]) => id === organizationId)).toEqual([[organizationId, "ROLE_VIEWER"]]);
    expect(await organizationsOf(again)).toHaveLength(2);
  });

  it("an expired invitation cannot be read, accepted, or signed up with", async () => {
    const token = "expired-invitation-token-0123456789abcdefghijk";
    await service.store.teams.createInvitation({
      organizationId,
      email: "dave@example.com",
      role: "member",
      tokenHash: invitationTokenHash(token),
      invitedBy: "",
      expiresAt: new Date(Date.now() - 1000),
    });
    const dave = new DashboardClient(service.url);
    expect((await dave.call("TeamService/GetInvitation", { token })).body.code).toBe("not_found");
    expect((await signUpWith(dave, "dave@example.com", token)).body.code).toBe("not_found");
    expect(await exists("dave@example.com")).toBe(false);
    await dave.signUp("dave@example.com");
    expect((await dave.call("TeamService/AcceptInvitation", { token })).body.code).toBe("not_found");
    expect((await organizationsOf(dave)).map(([id]) => id)).not.toContain(organizationId);
  });

  it("a revoked invitation cannot be read, accepted, or signed up with", async () => {
    const token = await invite("erin@example.com");
    const pending = (await alice.ok("TeamService/ListInvitations", { organizationId })).invitations as Json[];
    const id = pending.find((i) => i.email === "erin@example.com")!.id;
    await alice.ok("TeamService/RevokeInvitation", { organizationId, invitationId: id });
    const erin = new DashboardClient(service.url);
    expect((await erin.call("TeamService/GetInvitation", { token })).body.code).toBe("not_found");
    expect((await signUpWith(erin, "erin@example.com", token)).body.code).toBe("not_found");
    await erin.signUp("erin@example.com");
    expect((await erin.call("TeamService/AcceptInvitation", { token })).body.code).toBe("not_found");
    expect((await organizationsOf(erin)).map(([id]) => id)).not.toContain(organizationId);
  });

  it("another address gets PERMISSION_DENIED, signing up or signed in, and the invitation stays usable by the invited one", async () => {
    const token = await invite("frank@example.com");
    const mallory = new DashboardClient(service.url);
    const refused = await signUpWith(mallory, "mallory@example.com", token);
    expect(refused.body).toMatchObject({
      code: "permission_denied",
      message: "this invitation is for frank@example.com; sign in or sign up with that address to accept it",
    });
    expect(await exists("mallory@example.com")).toBe(false);
    await mallory.signUp("mallory@example.com");
    expect((await mallory.call("TeamService/AcceptInvitation", { token })).body.code).toBe("permission_denied");
    expect((await organizationsOf(mallory)).map(([id]) => id)).not.toContain(organizationId);
    const frank = new DashboardClient(service.url);
    expect((await signUpWith(frank, "frank@example.com", token)).status).toBe(200);
    expect(await organizationsOf(frank)).toEqual([[organizationId, "ROLE_MEMBER"]]);
  });

  it("guessing tokens is throttled per address like log-in: RESOURCE_EXHAUSTED past the limit, even for a valid token", async () => {
    const token = await invite("grace@example.com");
    const guesser = new DashboardClient(service.url);
    await guesser.signUp("guesser@example.com");
    const from = { forwardedFor: "203.0.113.7" };
    const guesses = Array.from({ length: service.config.loginMaxPerAddress }, (_, i) => `guess-${i}-${"x".repeat(40)}`);
    for (const [i, guess] of guesses.entries()) {
      const method = i % 2 === 0 ? "TeamService/GetInvitation" : "TeamService/AcceptInvitation";
      expect((await guesser.call(method, { token: guess }, from)).body.code).toBe("not_found");
    }
    const throttled = await guesser.call("TeamService/GetInvitation", { token }, from);
    expect(throttled.status).toBe(429);
    expect(throttled.body).toMatchObject({ code: "resource_exhausted", message: expect.stringMatching(/^too many invitation attempts/) });
    expect((await guesser.call("TeamService/AcceptInvitation", { token }, from)).body.code).toBe("resource_exhausted");
    // Another address is not affected.
    expect((await guesser.call("TeamService/GetInvitation", { token }, { forwardedFor: "203.0.113.8" })).status).toBe(200);
  });
});

describe("invitations with sign-up closed", () => {
  it("let the invited address sign up, and nobody else", async () => {
    const service = await startTestService({ signupOpen: false });
    const owner = await service.store.users.createUser({ email: "owner@example.com", passwordHash: await hashPassword(password) });
    const { organization } = await service.store.teams.createOrganization({ name: "private", ownerUserId: owner.id, project: { name: "Default", plan: "free" } });
    const admin = new DashboardClient(service.url);
    await admin.ok("AuthService/LogIn", { email: "owner@example.com", password });
    const { url } = await admin.ok("TeamService/CreateInvitation", { organizationId: organization.id, email: "new@example.com", role: "ROLE_MEMBER" });

    const stranger = await new DashboardClient(service.url).call("AuthService/SignUp", { email: "stranger@example.com", password });
    expect(stranger.body).toMatchObject({ code: "permission_denied", message: "sign-up is closed on this installation" });
    const invited = new DashboardClient(service.url);
    expect((await invited.call("AuthService/SignUp", { email: "new@example.com", password, invitationToken: tokenOf(url) })).status).toBe(200);
    expect(((await invited.ok("TeamService/ListOrganizations")).organizations as Json[]).map((o) => o.organization.id)).toEqual([organization.id]);
  });
});
