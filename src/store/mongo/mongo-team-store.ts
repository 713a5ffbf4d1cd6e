import { MongoServerError } from "mongodb";
import { newId } from "../ids.js";
import {
  AlreadyMemberError,
  LastOwnerError,
  strongerRole,
  type AuditEntry,
  type InvitationRecord,
  type MembershipRecord,
  type OrganizationRecord,
  type ProjectRecord,
  type Role,
  type TeamStore,
} from "../team-store.js";
import type { AccountDoc, AuditDoc, InvitationDoc, MembershipDoc, MongoCollections, OrganizationDoc } from "./mongo-collections.js";

/**
 * Organizations, members, projects, invitations and the audit log in ordinary collections. Not
 * every MongoDB-compatible server has transactions, or even atomic conditional updates (FerretDB
 * 1.24 reads, then writes), so each rule rests on a unique _id, the one guard they all have: a
 * membership's _id is `<organization>:<user>`; an invitation is accepted or revoked by inserting
 * its use under its own id (one of the two wins); a change that could leave no owner is made,
 * checked and undone.
 */
export function mongoTeamStore(c: MongoCollections): TeamStore {
  const membershipId = (organizationId: string, userId: string) => `${organizationId}:${userId}`;
  const withEmails = async (docs: MembershipDoc[]): Promise<MembershipRecord[]> => {
    const users = new Map((await c.users.find({ _id: { $in: docs.map((d) => d.userId) } }).toArray()).map((u) => [u._id, u.email]));
    return docs.filter((d) => users.has(d.userId)).map((d) => toMembership(d, users.get(d.userId)!));
  };
  const membership = async (organizationId: string, userId: string) => {
    const doc = await c.memberships.findOne({ _id: membershipId(organizationId, userId) });
    return doc ? (await withEmails([doc]))[0] : undefined;
  };
  /** After a change that may have taken the last owner away: undoes it with `undo` and throws. */
  const keepAnOwner = async (organizationId: string, undo: () => Promise<unknown>) => {
    if ((await c.memberships.countDocuments({ organizationId, role: "owner" })) > 0) return;
    await undo();
    throw new LastOwnerError();
  };
  /** Records an invitation's one use; false when it was used (accepted or revoked) already. */
  const claimUse = async (id: string, organizationId: string, kind: "accepted" | "revoked", at: Date) => {
    try {
      await c.invitationUses.insertOne({ _id: id, organizationId, kind, at });
      return true;
    } catch (error) {
      if (error instanceof MongoServerError && error.code === 11000) return false;
      throw error;
    }
  };
  const insertProject = async (organizationId: string, name: string, plan: string, id = newId("prj")): Promise<ProjectRecord> => {
    const doc: AccountDoc = { _id: id, organizationId, name, plan, createdAt: new Date(), timeZone: "" };
    await c.accounts.insertOne(doc);
    return toProject(doc);
  };

  /** Every collection that names the project, found in the database rather than listed, so a roll-up added later is covered too. */
  const deleteProjectData = async (projectId: string): Promise<boolean> => {
    const keyIds = (await c.keys.find({ accountId: projectId }).project<{ _id: string }>({ _id: 1 }).toArray()).map((k) => k._id);
    for (const keyId of keyIds) await c.idempotency.deleteMany({ _id: { $regex: `^${escapeRegex(keyId)}:` } });
    const known = new Set(["accounts", "api_keys", "users", "sessions", "organizations", "memberships", "invitations", "invitation_uses", "audit_log"]);
    for (const info of await c.db.listCollections({}, { nameOnly: false }).toArray()) {
      if (info.name.startsWith("system.") || info.type === "view" || known.has(info.name)) continue;
      // Traces keep the project in their meta field (a time-series collection can be filtered by it alone).
      const fields = info.type === "timeseries" ? ["meta.accountId"] : ["meta.accountId", "accountId"];
      for (const field of fields) await c.db.collection(info.name).deleteMany({ [field]: projectId });
    }
    await c.keys.deleteMany({ accountId: projectId });
    return (await c.accounts.deleteOne({ _id: projectId })).deletedCount > 0;
  };

  return {
    async createOrganization({ name, ownerUserId, project }) {
      const organization: OrganizationDoc = { _id: newId("org"), name, createdAt: new Date(), joinDomain: "", joinRole: "member" };
      await c.organizations.insertOne(organization);
      const created = await insertProject(organization._id, project.name, project.plan);
      if (ownerUserId !== undefined) {
        await c.memberships.insertOne({
          _id: membershipId(organization._id, ownerUserId),
          organizationId: organization._id,
          userId: ownerUserId,
          role: "owner",
          createdAt: organization.createdAt,
        });
      }
      return { organization: toOrganization(organization), project: created };
    },
    async getOrganization(id) {
      const doc = await c.organizations.findOne({ _id: id });
      return doc ? toOrganization(doc) : undefined;
    },
    async updateOrganization(id, change) {
      const set = Object.fromEntries(Object.entries(change).filter(([, value]) => value !== undefined));
      const doc = await c.organizations.findOneAndUpdate({ _id: id }, { $set: set }, { returnDocument: "after" });
      return doc ? toOrganization(doc) : undefined;
    },
    async deleteOrganization(id) {
      for (const project of await c.accounts.find({ organizationId: id }).toArray()) await deleteProjectData(project._id);
      await c.memberships.deleteMany({ organizationId: id });
      await c.invitations.deleteMany({ organizationId: id });
      await c.invitationUses.deleteMany({ organizationId: id });
      await c.audit.deleteMany({ organizationId: id });
      return (await c.organizations.deleteOne({ _id: id })).deletedCount > 0;
    },
    async organizationsOf(userId) {
      const memberships = await c.memberships.find({ userId }).toArray();
      const organizations = await c.organizations
        .find({ _id: { $in: memberships.map((m) => m.organizationId) } })
        .sort({ createdAt: 1, _id: 1 })
        .toArray();
      const roleIn = new Map(memberships.map((m) => [m.organizationId, m.role as Role]));
      return organizations.map((o) => ({ organization: toOrganization(o), role: roleIn.get(o._id)! }));
    },
    async organizationsJoinedBy(domain) {
      return (await c.organizations.find({ joinDomain: domain }).sort({ createdAt: 1, _id: 1 }).toArray()).map(toOrganization);
    },
    async createProject({ organizationId, name, plan }) {
      return insertProject(organizationId, name, plan);
    },
    async getProject(id) {
      const doc = await c.accounts.findOne({ _id: id });
      return doc ? toProject(doc) : undefined;
    },
    async listProjects(organizationId) {
      const filter = organizationId === undefined ? {} : { organizationId };
      return (await c.accounts.find(filter).sort({ createdAt: 1, _id: 1 }).toArray()).map(toProject);
    },
    async projectSummaries() {
      const projects = await this.listProjects();
      const members = await withEmails(await c.memberships.find({}).sort({ createdAt: 1, _id: 1 }).toArray());
      return projects.map((p) => ({ ...p, emails: members.filter((m) => m.organizationId === p.organizationId).map((m) => m.email) }));
    },
    async updateProject(id, change) {
      const set: Partial<AccountDoc> = {};
      const unset: Record<string, ""> = {};
      if (change.name !== undefined) set.name = change.name;
      if (change.plan !== undefined) set.plan = change.plan;
      if (change.timeZone !== undefined) set.timeZone = change.timeZone;
      if (change.retentionDays === null) unset.retentionDays = "";
      else if (change.retentionDays !== undefined) set.retentionDays = change.retentionDays;
      const update = { ...(Object.keys(set).length ? { $set: set } : {}), ...(Object.keys(unset).length ? { $unset: unset } : {}) };
      if (Object.keys(update).length === 0) return this.getProject(id);
      const doc = await c.accounts.findOneAndUpdate({ _id: id }, update, { returnDocument: "after" });
      return doc ? toProject(doc) : undefined;
    },
    async deleteProject(id) {
      return deleteProjectData(id);
    },
    async defaultProject(plan) {
      // Ids made from the plan: instances making it at once all make the same documents.
      const organizationId = "org_default";
      const id = `prj_default-${plan}`;
      await upsertOnce(() =>
        c.organizations.updateOne(
          { _id: organizationId },
          { $setOnInsert: { name: "Default", createdAt: new Date(), joinDomain: "", joinRole: "member" } },
          { upsert: true },
        ),
      );
      await upsertOnce(() =>
        c.accounts.updateOne(
          { _id: id },
          { $setOnInsert: { organizationId, name: `default (${plan})`, plan, createdAt: new Date(), timeZone: "" } },
          { upsert: true },
        ),
      );
      return (await this.getProject(id))!;
    },
    getMembership: membership,
    async listMembers(organizationId) {
      return withEmails(await c.memberships.find({ organizationId }).sort({ createdAt: 1, _id: 1 }).toArray());
    },
    async addMember(organizationId, userId, role) {
      try {
        await c.memberships.insertOne({ _id: membershipId(organizationId, userId), organizationId, userId, role, createdAt: new Date() });
      } catch (error) {
        if (error instanceof MongoServerError && error.code === 11000) throw new AlreadyMemberError();
        throw error;
      }
      return (await membership(organizationId, userId))!;
    },
    async setRole(organizationId, userId, role) {
      const before = await c.memberships.findOneAndUpdate({ _id: membershipId(organizationId, userId) }, { $set: { role } });
      if (!before) return undefined;
      await keepAnOwner(organizationId, () => c.memberships.updateOne({ _id: before._id }, { $set: { role: before.role } }));
      return membership(organizationId, userId);
    },
    async removeMember(organizationId, userId) {
      const removed = await c.memberships.findOneAndDelete({ _id: membershipId(organizationId, userId) });
      if (!removed) return false;
      await keepAnOwner(organizationId, () => c.memberships.insertOne(removed));
      return true;
    },
    async createInvitation(input) {
      const doc: InvitationDoc = { _id: newId("inv"), ...input, createdAt: new Date() };
      await c.invitations.insertOne(doc);
      return toInvitation(doc);
    },
    async listInvitations(organizationId) {
      const docs = await c.invitations
        .find({ organizationId, acceptedAt: { $exists: false }, revokedAt: { $exists: false } })
        .sort({ createdAt: -1, _id: 1 })
        .toArray();
      return docs.map(toInvitation);
    },
    async findInvitation(tokenHash) {
      const doc = await c.invitations.findOne({ tokenHash });
      return doc ? toInvitation(doc) : undefined;
    },
    async revokeInvitation(organizationId, id) {
      const pending = await c.invitations.findOne({ _id: id, organizationId, acceptedAt: { $exists: false }, revokedAt: { $exists: false } });
      if (!pending) return undefined;
      const revokedAt = new Date();
      if (!(await claimUse(id, organizationId, "revoked", revokedAt))) return undefined;
      await c.invitations.updateOne({ _id: id }, { $set: { revokedAt } });
      return toInvitation({ ...pending, revokedAt });
    },
    async acceptInvitation(tokenHash, userId, now) {
      const doc = await c.invitations.findOne({ tokenHash });
      const claimed = doc && !doc.acceptedAt && !doc.revokedAt && doc.expiresAt > now && (await claimUse(doc._id, doc.organizationId, "accepted", now));
      if (!doc || !claimed) {
        const use = doc && (await c.invitationUses.findOne({ _id: doc._id }));
        const reason = !doc ? "unknown" : use ? use.kind : doc.acceptedAt ? "accepted" : doc.revokedAt ? "revoked" : "expired";
        return { kind: "unusable", reason };
      }
      await c.invitations.updateOne({ _id: doc._id }, { $set: { acceptedAt: now } });
      const invitation = toInvitation({ ...doc, acceptedAt: now });
      const _id = membershipId(invitation.organizationId, userId);
      const current = await c.memberships.findOne({ _id });
      if (current) await c.memberships.updateOne({ _id }, { $set: { role: strongerRole(current.role as Role, invitation.role) } });
      else await c.memberships.insertOne({ _id, organizationId: invitation.organizationId, userId, role: invitation.role, createdAt: now });
      return { kind: "accepted", invitation };
    },
    async appendAudit(entry) {
      const doc: AuditDoc = { ...entry, _id: newId("aud"), at: entry.at ?? new Date() };
      await c.audit.insertOne(doc);
      return toAudit(doc);
    },
    async listAudit(organizationId, { limit, before }) {
      const anchor = before === undefined ? undefined : await c.audit.findOne({ _id: before, organizationId });
      const filter = anchor
        ? { organizationId, $or: [{ at: { $lt: anchor.at } }, { at: anchor.at, _id: { $lt: anchor._id } }] }
        : { organizationId };
      return (await c.audit.find(filter).sort({ at: -1, _id: -1 }).limit(limit).toArray()).map(toAudit);
    },
  };
}

/** An upsert that two instances may race: the loser's duplicate key error means the document is there. */
async function upsertOnce(upsert: () => Promise<unknown>): Promise<void> {
  try {
    await upsert();
  } catch (error) {
    if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
  }
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function toOrganization(doc: OrganizationDoc): OrganizationRecord {
  return { id: doc._id, name: doc.name, createdAt: doc.createdAt, joinDomain: doc.joinDomain ?? "", joinRole: (doc.joinRole ?? "member") as Role };
}

export function toProject(doc: AccountDoc): ProjectRecord {
  return {
    id: doc._id,
    organizationId: doc.organizationId ?? "",
    name: doc.name,
    plan: doc.plan,
    retentionDays: doc.retentionDays ?? undefined,
    timeZone: doc.timeZone ?? "",
    createdAt: doc.createdAt,
  };
}

function toMembership(doc: MembershipDoc, email: string): MembershipRecord {
  return { organizationId: doc.organizationId, userId: doc.userId, email, role: doc.role as Role, createdAt: doc.createdAt };
}

function toInvitation(doc: InvitationDoc): InvitationRecord {
  return {
    id: doc._id,
    organizationId: doc.organizationId,
    email: doc.email,
    role: doc.role as Role,
    tokenHash: doc.tokenHash,
    invitedBy: doc.invitedBy,
    createdAt: doc.createdAt,
    expiresAt: doc.expiresAt,
    acceptedAt: doc.acceptedAt ?? undefined,
    revokedAt: doc.revokedAt ?? undefined,
  };
}

function toAudit(doc: AuditDoc): AuditEntry {
  return {
    id: doc._id,
    organizationId: doc.organizationId,
    projectId: doc.projectId,
    actor: doc.actor,
    action: doc.action,
    target: doc.target,
    details: doc.details,
    at: doc.at,
  };
}
