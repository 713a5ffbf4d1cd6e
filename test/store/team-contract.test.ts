import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { StoredTraceSchema } from "../../gen/calltrace/v1/trace_pb.js";
import type { Store } from "../../src/store/store.js";
import { AlreadyMemberError, LastOwnerError } from "../../src/store/team-store.js";
import { storeAdapters } from "../support/store-adapters.js";

/** The teams part of the store contract: organizations, members, projects, invitations and the audit log, on every adapter. */
const adapters = storeAdapters();
const day = 86_400_000;

/** A one-token call of a project's key, received `ago` ms ago. */
const traceWrite = (projectId: string, keyId: string, ago: number) => ({
  trace: create(StoredTraceSchema, {
    receivedAt: timestampFromMs(Date.now() - ago),
    keyId,
    accountId: projectId,
    country: "FR",
    provider: "openai",
    model: "gpt-4o",
    tokensIn: 1,
    tokensOut: 1,
    latencyMs: 1,
    costUsd: 1,
    status: "success",
  }),
  idempotencyKey: undefined,
});

describe.each(adapters)("team store contract: %s", (_name, open) => {
  let store: Store;
  beforeEach(async () => {
    store = (await open()).store;
  });
  afterEach(async () => {
    await store.close();
  });

  const user = (name: string) => store.users.createUser({ email: `${name}-${Math.random().toString(36).slice(2)}@example.com`, passwordHash: "h" });

  it("creates an organization with its first project and owner, and more projects in it", async () => {
    const ann = await user("ann");
    const { organization, project } = await store.teams.createOrganization({ name: "Acme", ownerUserId: ann.id, project: { name: "prod", plan: "pro" } });
    expect(organization).toMatchObject({ name: "Acme", joinDomain: "", joinRole: "member" });
    expect(project).toMatchObject({ organizationId: organization.id, name: "prod", plan: "pro", retentionDays: undefined, timeZone: "" });
    expect(await store.teams.getOrganization(organization.id)).toEqual(organization);
    expect(await store.teams.getProject(project.id)).toEqual(project);
    // Projects are listed by creation time, then id: created in the same millisecond, their order is the random ids'.
    await new Promise((resolve) => setTimeout(resolve, 2));
    const staging = await store.teams.createProject({ organizationId: organization.id, name: "staging", plan: "pro" });
    expect((await store.teams.listProjects(organization.id)).map((p) => p.name)).toEqual(["prod", "staging"]);
    expect(await store.teams.organizationsOf(ann.id)).toEqual([{ organization, role: "owner" }]);
    expect(await store.teams.listMembers(organization.id)).toEqual([expect.objectContaining({ userId: ann.id, email: ann.email, role: "owner" })]);

    const updated = await store.teams.updateProject(staging.id, { name: "stage", retentionDays: 7, timeZone: "Europe/Paris" });
    expect(updated).toMatchObject({ name: "stage", retentionDays: 7, timeZone: "Europe/Paris", plan: "pro" });
    expect(await store.teams.updateProject(staging.id, { retentionDays: null })).toMatchObject({ retentionDays: undefined, name: "stage" });
    expect(await store.teams.updateProject("prj_none", { name: "x" })).toBeUndefined();
    expect(await store.teams.updateOrganization(organization.id, { joinDomain: "acme.test", joinRole: "viewer" })).toMatchObject({
      name: "Acme",
      joinDomain: "acme.test",
      joinRole: "viewer",
    });
    expect((await store.teams.organizationsJoinedBy("acme.test")).map((o) => o.id)).toEqual([organization.id]);
    expect(await store.teams.organizationsJoinedBy("other.test")).toEqual([]);
    expect((await store.teams.projectSummaries()).find((p) => p.id === project.id)!.emails).toEqual([ann.email]);
  });

  it("keeps at least one owner: the last one can be neither demoted nor removed, a second one can", async () => {
    const [ann, bob] = [await user("ann"), await user("bob")];
    const { organization } = await store.teams.createOrganization({ name: "Two", ownerUserId: ann.id, project: { name: "p", plan: "free" } });
    await store.teams.addMember(organization.id, bob.id, "viewer");
    await expect(store.teams.addMember(organization.id, bob.id, "admin")).rejects.toBeInstanceOf(AlreadyMemberError);
    await expect(store.teams.setRole(organization.id, ann.id, "admin")).rejects.toBeInstanceOf(LastOwnerError);
    await expect(store.teams.removeMember(organization.id, ann.id)).rejects.toBeInstanceOf(LastOwnerError);
    expect((await store.teams.getMembership(organization.id, ann.id))!.role).toBe("owner");

    expect(await store.teams.setRole(organization.id, bob.id, "owner")).toMatchObject({ userId: bob.id, role: "owner" });
    expect(await store.teams.setRole(organization.id, ann.id, "member")).toMatchObject({ role: "member" });
    expect(await store.teams.removeMember(organization.id, ann.id)).toBe(true);
    expect(await store.teams.removeMember(organization.id, ann.id)).toBe(false);
    expect(await store.teams.setRole(organization.id, ann.id, "viewer")).toBeUndefined();
    expect(await store.teams.organizationsOf(ann.id)).toEqual([]);
  });

  it("two owners demoting each other at once leave at least one owner", async () => {
    const [ann, bob] = [await user("ann"), await user("bob")];
    const { organization } = await store.teams.createOrganization({ name: "Race", ownerUserId: ann.id, project: { name: "p", plan: "free" } });
    await store.teams.addMember(organization.id, bob.id, "owner");
    const outcomes = await Promise.allSettled([store.teams.setRole(organization.id, ann.id, "admin"), store.teams.setRole(organization.id, bob.id, "admin")]);
    expect(outcomes.some((o) => o.status === "rejected")).toBe(true);
    expect((await store.teams.listMembers(organization.id)).filter((m) => m.role === "owner").length).toBeGreaterThanOrEqual(1);
  });

  it("an invitation is used once, and never when revoked or expired; a member keeps the stronger role", async () => {
    const [ann, bob, cy] = [await user("ann"), await user("bob"), await user("cy")];
    const { organization } = await store.teams.createOrganization({ name: "Inv", ownerUserId: ann.id, project: { name: "p", plan: "free" } });
    const invite = (tokenHash: string, expiresAt = new Date(Date.now() + day), role: "admin" | "viewer" = "admin") =>
      store.teams.createInvitation({ organizationId: organization.id, email: bob.email, role, tokenHash, invitedBy: ann.id, expiresAt });
    const first = await invite(`t1-${organization.id}`);
    expect(first).toMatchObject({ email: bob.email, role: "admin", acceptedAt: undefined, revokedAt: undefined });
    expect(await store.teams.findInvitation(`t1-${organization.id}`)).toEqual(first);
    expect((await store.teams.listInvitations(organization.id)).map((i) => i.id)).toEqual([first.id]);

    const now = new Date();
    const accepts = await Promise.all([bob.id, cy.id].map((id) => store.teams.acceptInvitation(`t1-${organization.id}`, id, now)));
    expect(accepts.filter((a) => a.kind === "accepted")).toHaveLength(1);
    expect(accepts.filter((a) => a.kind === "unusable")).toEqual([{ kind: "unusable", reason: "accepted" }]);
    expect(await store.teams.listInvitations(organization.id)).toEqual([]);

    await invite(`t2-${organization.id}`, new Date(Date.now() - 1));
    expect(await store.teams.acceptInvitation(`t2-${organization.id}`, bob.id, new Date())).toEqual({ kind: "unusable", reason: "expired" });
    const revoked = await invite(`t3-${organization.id}`);
    expect(await store.teams.revokeInvitation("org_other", revoked.id)).toBeUndefined();
    expect((await store.teams.revokeInvitation(organization.id, revoked.id))!.revokedAt).toBeInstanceOf(Date);
    expect(await store.teams.revokeInvitation(organization.id, revoked.id)).toBeUndefined();
    expect(await store.teams.acceptInvitation(`t3-${organization.id}`, bob.id, new Date())).toEqual({ kind: "unusable", reason: "revoked" });
    expect(await store.teams.acceptInvitation("t-none", bob.id, new Date())).toEqual({ kind: "unusable", reason: "unknown" });

    // A weaker invitation leaves a member's role as it is.
    const accepter = accepts[0]!.kind === "accepted" ? bob : cy;
    expect((await store.teams.getMembership(organization.id, accepter.id))!.role).toBe("admin");
    await invite(`t4-${organization.id}`, new Date(Date.now() + day), "viewer");
    expect((await store.teams.acceptInvitation(`t4-${organization.id}`, accepter.id, new Date())).kind).toBe("accepted");
    expect((await store.teams.getMembership(organization.id, accepter.id))!.role).toBe("admin");
  });

  it("keeps an audit log per organization, newest first, in pages", async () => {
    const ann = await user("ann");
    const { organization, project } = await store.teams.createOrganization({ name: "Aud", ownerUserId: ann.id, project: { name: "p", plan: "free" } });
    const other = await store.teams.createOrganization({ name: "Other", project: { name: "q", plan: "free" } });
    for (let i = 0; i < 5; i++) {
      await store.teams.appendAudit({
        organizationId: organization.id,
        projectId: project.id,
        actor: ann.email,
        action: "key.create",
        target: `key_${i}`,
        details: { n: String(i) },
        at: new Date(Date.now() + i),
      });
    }
    await store.teams.appendAudit({ organizationId: other.organization.id, projectId: "", actor: "cli", action: "key.create", target: "x", details: {} });
    const first = await store.teams.listAudit(organization.id, { limit: 3 });
    expect(first.map((e) => e.target)).toEqual(["key_4", "key_3", "key_2"]);
    expect(first[0]).toMatchObject({ actor: ann.email, action: "key.create", projectId: project.id, details: { n: "4" } });
    const second = await store.teams.listAudit(organization.id, { limit: 3, before: first[2]!.id });
    expect(second.map((e) => e.target)).toEqual(["key_1", "key_0"]);
    // Another organization's entry id is no anchor here.
    expect((await store.teams.listAudit(organization.id, { limit: 10, before: "aud_none" })).length).toBe(5);
  });

  it("deletes an organization with its projects, keys, traces, members, invitations and audit log, and nothing else", async () => {
    const ann = await user("ann");
    const make = async (name: string) => {
      const { organization, project } = await store.teams.createOrganization({ name, ownerUserId: ann.id, project: { name, plan: "free" } });
      const second = await store.teams.createProject({ organizationId: organization.id, name: `${name}-2`, plan: "free" });
      for (const p of [project, second]) {
        const key = await store.keys.createKey({ accountId: p.id, name, hash: `h-${p.id}`, prefix: "x" });
        await store.writeBatch([traceWrite(p.id, key.id, 2 * day)]);
      }
      await store.teams.createInvitation({ organizationId: organization.id, email: "x@example.com", role: "viewer", tokenHash: `inv-${organization.id}`, invitedBy: ann.id, expiresAt: new Date(Date.now() + day) });
      await store.teams.appendAudit({ organizationId: organization.id, projectId: "", actor: "cli", action: "a", target: "", details: {} });
      return { organization, projects: [project, second] };
    };
    const gone = await make("gone");
    const kept = await make("kept");
    const all = create(TraceFilterSchema, { since: timestampFromMs(Date.now() - 10 * day) });

    expect(await store.teams.deleteOrganization(gone.organization.id)).toBe(true);
    expect(await store.teams.getOrganization(gone.organization.id)).toBeUndefined();
    for (const p of gone.projects) {
      expect(await store.teams.getProject(p.id)).toBeUndefined();
      expect(await store.keys.findKeyByHash(`h-${p.id}`)).toBeUndefined();
      expect((await store.usageTotals(p.id, all)).calls).toBe(0n);
    }
    expect(await store.teams.findInvitation(`inv-${gone.organization.id}`)).toBeUndefined();
    expect(await store.teams.listAudit(gone.organization.id, { limit: 10 })).toEqual([]);
    expect((await store.teams.organizationsOf(ann.id)).map((o) => o.organization.id)).toEqual([kept.organization.id]);
    for (const p of kept.projects) expect((await store.usageTotals(p.id, all)).calls).toBe(1n);
    expect(await store.teams.deleteOrganization(gone.organization.id)).toBe(false);
  });

  it("makes the default project of a plan once, whoever asks at the same time", async () => {
    const made = await Promise.all([store.teams.defaultProject("pro"), store.teams.defaultProject("pro"), store.teams.defaultProject("free")]);
    expect(made[0]!.id).toBe(made[1]!.id);
    expect(made[0]).toMatchObject({ plan: "pro" });
    expect(made[2]!.id).not.toBe(made[0]!.id);
    expect((await store.teams.defaultProject("pro")).id).toBe(made[0]!.id);
  });

  it("deleting a user ends their sessions and memberships", async () => {
    const [ann, bob] = [await user("ann"), await user("bob")];
    const { organization } = await store.teams.createOrganization({ name: "U", ownerUserId: ann.id, project: { name: "p", plan: "free" } });
    await store.teams.addMember(organization.id, bob.id, "member");
    await store.users.createSession({ tokenHash: `s-${bob.id}`, userId: bob.id, createdAt: new Date(), expiresAt: new Date(Date.now() + day), userAgent: "" });
    expect(await store.users.deleteUser(bob.id)).toBe(true);
    expect(await store.users.getUser(bob.id)).toBeUndefined();
    expect(await store.users.findSession(`s-${bob.id}`)).toBeUndefined();
    expect(await store.teams.getMembership(organization.id, bob.id)).toBeUndefined();
    expect(await store.users.deleteUser(bob.id)).toBe(false);
  });
});

describe.each(adapters)("project retention: %s", (_name, open) => {
  it("the sweeper deletes a project's traces past its own shorter retention, and no other project's", async () => {
    const { store } = await open({ retentionDays: 30 });
    try {
      const short = (await store.teams.createOrganization({ name: "s", project: { name: "s", plan: "free" } })).project;
      const long = (await store.teams.createOrganization({ name: "l", project: { name: "l", plan: "free" } })).project;
      await store.teams.updateProject(short.id, { retentionDays: 2 });
      await store.writeBatch([short, long].flatMap((p) => [5 * day, day].map((ago) => traceWrite(p.id, `key_${p.id}`, ago))));
      await store.deleteExpired();
      const all = create(TraceFilterSchema, { since: timestampFromMs(Date.now() - 20 * day) });
      const kept = async (projectId: string) => {
        const traces = [];
        for await (const t of store.exportTraces({ accountId: projectId })) traces.push(t);
        return traces.length;
      };
      expect(await kept(long.id)).toBe(2);
      expect((await store.usageTotals(long.id, all)).calls).toBe(2n);
      // Where the server cannot delete from a time-series collection by time, the read's own
      // narrowing (src/teams/project-retention.ts) hides the rest; the embedded store deletes.
      if (_name.startsWith("embedded")) {
        expect(await kept(short.id)).toBe(1);
        expect((await store.usageTotals(short.id, all)).calls).toBe(1n);
      }
    } finally {
      await store.close();
    }
  });
});
