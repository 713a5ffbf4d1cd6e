import { beforeAll, describe, expect, it } from "vitest";
import { DashboardClient, type Json } from "../dashboard/dashboard-client.js";
import { startTestService, type TestService } from "../support/test-service.js";

const tokenOf = (url: string) => url.slice(url.lastIndexOf("/") + 1);
const lines = async (res: Response) => (await res.text()).split("\n").filter(Boolean).map((line) => JSON.parse(line) as Json);

/** GET /app/export/audit.jsonl over real sockets: the whole log to admins and owners, nothing to anyone else. */
describe("audit log download", () => {
  let service: TestService;
  let alice: DashboardClient;
  let bob: DashboardClient;
  let carol: DashboardClient;
  let organizationId: string;
  const path = () => `/app/export/audit.jsonl?organization=${organizationId}`;
  /** The whole log as ListAuditLog pages it (500 at most a page). */
  const listAll = async () => {
    const all: Json[] = [];
    for (let before = ""; ; ) {
      const page = ((await alice.ok("TeamService/ListAuditLog", { organizationId, limit: 500, before })).entries as Json[] | undefined) ?? [];
      all.push(...page);
      if (page.length < 500) return all;
      before = page.at(-1)!.id;
    }
  };

  beforeAll(async () => {
    service = await startTestService({ signupMaxPerAddress: 50 });
    alice = new DashboardClient(service.url);
    await alice.signUp("alice@example.com");
    organizationId = ((await alice.ok("TeamService/ListOrganizations")).organizations as Json[])[0]!.organization.id;
    await alice.ok("AccountService/CreateKey", { name: "prod" });
    const join = async (email: string, role: string) => {
      const { url } = await alice.ok("TeamService/CreateInvitation", { organizationId, email, role });
      const client = new DashboardClient(service.url);
      await client.ok("AuthService/SignUp", { email, password: "correct horse battery", invitationToken: tokenOf(url) });
      return client;
    };
    bob = await join("bob@example.com", "ROLE_VIEWER");
    carol = await join("carol@example.com", "ROLE_ADMIN");
  });

  it("streams every entry, newest first, as ListAuditLog answers them", async () => {
    const res = await alice.get(path());
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson; charset=utf-8");
    expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="calltrace-audit-[\d-]+\.jsonl"$/);
    const downloaded = await lines(res);
    expect(downloaded).toEqual(await listAll());
    expect(downloaded.map((e) => e.action).reverse()).toEqual(["key.create", "invitation.create", "member.join", "invitation.create", "member.join"]);
    expect(downloaded[0]).toMatchObject({ actor: "carol@example.com", action: "member.join", details: { role: "admin" } });
  });

  it("pages through a long log without losing or repeating an entry", async () => {
    const before = (await lines(await alice.get(path()))).length;
    for (let i = 0; i < 1234; i++) {
      await service.store.teams.appendAudit({ organizationId, projectId: "", actor: "cli", action: "key.create", target: `key_${i}`, details: {} });
    }
    const downloaded = await lines(await carol.get(path()));
    expect(downloaded).toHaveLength(before + 1234);
    expect(new Set(downloaded.map((e) => e.id)).size).toBe(downloaded.length);
    expect(downloaded.slice(0, 1234).map((e) => e.target)).toEqual(Array.from({ length: 1234 }, (_, i) => `key_${1233 - i}`));
    expect(downloaded).toEqual(await listAll());
  });

  it("refuses a viewer, a stranger and no session, and another organization's id is as unknown as one that never existed", async () => {
    const viewer = await bob.get(path());
    expect(viewer.status).toBe(403);
    expect(await viewer.json()).toEqual({ error: "your role is viewer; this needs admin or above" });
    const anonymous = await fetch(new URL(path(), service.url));
    expect(anonymous.status).toBe(401);

    const mallory = new DashboardClient(service.url);
    await mallory.signUp("mallory@example.com");
    const none = "org_doesnotexist0000000000";
    const foreign = await mallory.get(path());
    const unknown = await mallory.get(`/app/export/audit.jsonl?organization=${none}`);
    expect(foreign.status).toBe(404);
    expect((await foreign.text()).replaceAll(organizationId, "<id>")).toBe((await unknown.text()).replaceAll(none, "<id>"));
    const unnamed = await mallory.get("/app/export/audit.jsonl");
    expect(unnamed.status).toBe(400);
    expect(await unnamed.json()).toEqual({ error: "organization_id: required" });
  });
});
