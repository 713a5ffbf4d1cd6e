import type Database from "better-sqlite3";
import { newId } from "../ids.js";
import {
  type AcceptOutcome,
  AlreadyMemberError,
  LastOwnerError,
  type AuditEntry,
  type InvitationRecord,
  type MembershipRecord,
  type OrganizationRecord,
  type ProjectRecord,
  type Role,
  strongerRole,
  type TeamStore,
} from "../team-store.js";

interface OrganizationRow {
  id: string;
  name: string;
  created_at: number;
  join_domain: string;
  join_role: string;
}

interface ProjectRow {
  id: string;
  organization_id: string;
  name: string;
  plan: string;
  retention_days: number | null;
  time_zone: string;
  created_at: number;
  emails?: string | null;
}

interface MembershipRow {
  organization_id: string;
  user_id: string;
  email: string;
  role: string;
  created_at: number;
}

interface InvitationRow {
  id: string;
  organization_id: string;
  email: string;
  role: string;
  token_hash: string;
  invited_by: string;
  created_at: number;
  expires_at: number;
  accepted_at: number | null;
  revoked_at: number | null;
}

interface AuditRow {
  seq: number;
  id: string;
  organization_id: string;
  project_id: string;
  actor: string;
  action: string;
  target: string;
  details: string;
  at: number;
}

/** Organizations, members, projects, invitations and the audit log in the embedded store's database. */
export function createSqliteTeamStore(db: Database.Database): TeamStore {
  const s = {
    insertOrganization: db.prepare(`INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)`),
    organizationById: db.prepare(`SELECT * FROM organizations WHERE id = ?`),
    updateOrganization: db.prepare(
      `UPDATE organizations SET name = COALESCE(@name, name), join_domain = COALESCE(@join_domain, join_domain),
         join_role = COALESCE(@join_role, join_role) WHERE id = @id`,
    ),
    organizationsOf: db.prepare(
      `SELECT o.*, m.role AS member_role FROM memberships m JOIN organizations o ON o.id = m.organization_id
       WHERE m.user_id = ? ORDER BY o.created_at, o.id`,
    ),
    joinedBy: db.prepare(`SELECT * FROM organizations WHERE join_domain = ? ORDER BY created_at, id`),
    projectIdsOf: db.prepare(`SELECT id FROM projects WHERE organization_id = ?`).pluck(),
    deleteOrganizationRows: db.prepare(`DELETE FROM organizations WHERE id = ?`),
    insertProject: db.prepare(`INSERT INTO projects (id, organization_id, name, plan, created_at) VALUES (?, ?, ?, ?, ?)`),
    // Ids made from the plan: processes making the default project at once all make the same rows.
    insertDefaultOrganization: db.prepare(`INSERT OR IGNORE INTO organizations (id, name, created_at) VALUES ('org_default', 'Default', ?)`),
    insertDefaultProject: db.prepare(
      `INSERT OR IGNORE INTO projects (id, organization_id, name, plan, created_at) VALUES (@id, 'org_default', @name, @plan, @now)`,
    ),
    projectById: db.prepare(`SELECT * FROM projects WHERE id = ?`),
    projectsOf: db.prepare(`SELECT * FROM projects WHERE organization_id = ? ORDER BY created_at, id`),
    allProjects: db.prepare(`SELECT * FROM projects ORDER BY created_at, id`),
    // json_group_array keeps emails intact whatever characters they hold.
    projectSummaries: db.prepare(
      `SELECT p.*, (SELECT json_group_array(e.email) FROM (SELECT u.email FROM memberships m JOIN users u ON u.id = m.user_id
         WHERE m.organization_id = p.organization_id ORDER BY m.created_at, u.email) e) AS emails
       FROM projects p ORDER BY p.created_at, p.id`,
    ),
    updateProject: db.prepare(
      `UPDATE projects SET name = COALESCE(@name, name), plan = COALESCE(@plan, plan),
         retention_days = CASE WHEN @set_retention THEN @retention_days ELSE retention_days END,
         time_zone = COALESCE(@time_zone, time_zone) WHERE id = @id`,
    ),
    deleteProjectRow: db.prepare(`DELETE FROM projects WHERE id = ?`),
    membership: db.prepare(
      `SELECT m.*, u.email FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.organization_id = ? AND m.user_id = ?`,
    ),
    members: db.prepare(
      `SELECT m.*, u.email FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.organization_id = ? ORDER BY m.created_at, u.email`,
    ),
    insertMembership: db.prepare(`INSERT INTO memberships (organization_id, user_id, role, created_at) VALUES (?, ?, ?, ?)`),
    setRole: db.prepare(`UPDATE memberships SET role = ? WHERE organization_id = ? AND user_id = ?`),
    deleteMembership: db.prepare(`DELETE FROM memberships WHERE organization_id = ? AND user_id = ?`),
    owners: db.prepare(`SELECT COUNT(*) FROM memberships WHERE organization_id = ? AND role = 'owner'`).pluck(),
    deleteMemberships: db.prepare(`DELETE FROM memberships WHERE organization_id = ?`),
    insertInvitation: db.prepare(
      `INSERT INTO invitations (id, organization_id, email, role, token_hash, invited_by, created_at, expires_at)
       VALUES (@id, @organization_id, @email, @role, @token_hash, @invited_by, @created_at, @expires_at)`,
    ),
    invitations: db.prepare(
      `SELECT * FROM invitations WHERE organization_id = ? AND accepted_at IS NULL AND revoked_at IS NULL ORDER BY created_at DESC, id`,
    ),
    invitationByToken: db.prepare(`SELECT * FROM invitations WHERE token_hash = ?`),
    invitationById: db.prepare(`SELECT * FROM invitations WHERE id = ?`),
    revokeInvitation: db.prepare(
      `UPDATE invitations SET revoked_at = ? WHERE organization_id = ? AND id = ? AND accepted_at IS NULL AND revoked_at IS NULL`,
    ),
    useInvitation: db.prepare(
      `UPDATE invitations SET accepted_at = @now WHERE token_hash = @token_hash AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > @now`,
    ),
    deleteInvitations: db.prepare(`DELETE FROM invitations WHERE organization_id = ?`),
    insertAudit: db.prepare(
      `INSERT INTO audit_log (id, organization_id, project_id, actor, action, target, details, at)
       VALUES (@id, @organization_id, @project_id, @actor, @action, @target, @details, @at)`,
    ),
    auditPage: db.prepare(
      `SELECT * FROM audit_log WHERE organization_id = @organization_id
         AND seq < COALESCE((SELECT seq FROM audit_log WHERE id = @before AND organization_id = @organization_id), 9223372036854775807)
       ORDER BY seq DESC LIMIT @limit`,
    ),
    deleteAudit: db.prepare(`DELETE FROM audit_log WHERE organization_id = ?`),
  };

  const insertOrganization = (name: string, createdAt: Date): OrganizationRecord => {
    const organization: OrganizationRecord = { id: newId("org"), name, createdAt, joinDomain: "", joinRole: "member" };
    s.insertOrganization.run(organization.id, name, createdAt.getTime());
    return organization;
  };
  const insertProject = (organizationId: string, name: string, plan: string): ProjectRecord => {
    const project: ProjectRecord = {
      id: newId("prj"),
      organizationId,
      name,
      plan,
      retentionDays: undefined,
      timeZone: "",
      createdAt: new Date(),
    };
    s.insertProject.run(project.id, organizationId, name, plan, project.createdAt.getTime());
    return project;
  };

  const createOrganization = db.transaction(
    (input: Parameters<TeamStore["createOrganization"]>[0]): { organization: OrganizationRecord; project: ProjectRecord } => {
      const organization = insertOrganization(input.name, new Date());
      const project = insertProject(organization.id, input.project.name, input.project.plan);
      if (input.ownerUserId !== undefined) s.insertMembership.run(organization.id, input.ownerUserId, "owner", organization.createdAt.getTime());
      return { organization, project };
    },
  );

  /**
   * Every table that names a project or a key, found in the schema rather than listed, so a
   * roll-up added later is deleted too. Rows naming the project's keys go first, then rows
   * naming the project (keys last, which others may reference), then the project.
   */
  const tablesWith = (column: string) =>
    db
      .prepare(
        `SELECT m.name FROM sqlite_master m JOIN pragma_table_info(m.name) c
         WHERE m.type = 'table' AND c.name = ? AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name`,
      )
      .pluck()
      .all(column) as string[];
  const deleteProjectData = (projectId: string): boolean => {
    const projectTables = tablesWith("account_id");
    for (const table of tablesWith("key_id").filter((t) => !projectTables.includes(t))) {
      db.prepare(`DELETE FROM "${table}" WHERE key_id IN (SELECT id FROM api_keys WHERE account_id = ?)`).run(projectId);
    }
    // The traces and the largest roll-ups name the project by its number (D65).
    for (const table of tablesWith("project_num")) {
      db.prepare(`DELETE FROM "${table}" WHERE project_num = (SELECT num FROM id_numbers WHERE id = ?)`).run(projectId);
    }
    for (const table of [...projectTables.filter((t) => t !== "api_keys"), "api_keys"]) {
      db.prepare(`DELETE FROM "${table}" WHERE account_id = ?`).run(projectId);
    }
    return s.deleteProjectRow.run(projectId).changes > 0;
  };
  const deleteProject = db.transaction(deleteProjectData);
  const deleteOrganization = db.transaction((organizationId: string): boolean => {
    for (const projectId of s.projectIdsOf.all(organizationId) as string[]) deleteProjectData(projectId);
    s.deleteMemberships.run(organizationId);
    s.deleteInvitations.run(organizationId);
    s.deleteAudit.run(organizationId);
    return s.deleteOrganizationRows.run(organizationId).changes > 0;
  });

  const keepsAnOwner = (organizationId: string) => {
    if ((s.owners.get(organizationId) as number) === 0) throw new LastOwnerError();
  };
  const setRole = db.transaction((organizationId: string, userId: string, role: Role): MembershipRecord | undefined => {
    if (s.setRole.run(role, organizationId, userId).changes === 0) return undefined;
    keepsAnOwner(organizationId);
    return toMembership(s.membership.get(organizationId, userId) as MembershipRow);
  });
  const removeMember = db.transaction((organizationId: string, userId: string): boolean => {
    if (s.deleteMembership.run(organizationId, userId).changes === 0) return false;
    keepsAnOwner(organizationId);
    return true;
  });
  const acceptInvitation = db.transaction((tokenHash: string, userId: string, now: Date): AcceptOutcome => {
    if (s.useInvitation.run({ token_hash: tokenHash, now: now.getTime() }).changes === 0) {
      const row = s.invitationByToken.get(tokenHash) as InvitationRow | undefined;
      const reason = !row ? "unknown" : row.accepted_at !== null ? "accepted" : row.revoked_at !== null ? "revoked" : "expired";
      return { kind: "unusable", reason };
    }
    const invitation = toInvitation(s.invitationByToken.get(tokenHash) as InvitationRow);
    const current = s.membership.get(invitation.organizationId, userId) as MembershipRow | undefined;
    if (!current) s.insertMembership.run(invitation.organizationId, userId, invitation.role, now.getTime());
    else s.setRole.run(strongerRole(current.role as Role, invitation.role), invitation.organizationId, userId);
    return { kind: "accepted", invitation };
  });

  return {
    async createOrganization(input) {
      return createOrganization.immediate(input);
    },
    async getOrganization(id) {
      const row = s.organizationById.get(id) as OrganizationRow | undefined;
      return row && toOrganization(row);
    },
    async updateOrganization(id, change) {
      s.updateOrganization.run({ id, name: change.name ?? null, join_domain: change.joinDomain ?? null, join_role: change.joinRole ?? null });
      return this.getOrganization(id);
    },
    async deleteOrganization(id) {
      return deleteOrganization.immediate(id);
    },
    async organizationsOf(userId) {
      return (s.organizationsOf.all(userId) as Array<OrganizationRow & { member_role: string }>).map((row) => ({
        organization: toOrganization(row),
        role: row.member_role as Role,
      }));
    },
    async organizationsJoinedBy(domain) {
      return (s.joinedBy.all(domain) as OrganizationRow[]).map(toOrganization);
    },
    async createProject({ organizationId, name, plan }) {
      return insertProject(organizationId, name, plan);
    },
    async getProject(id) {
      const row = s.projectById.get(id) as ProjectRow | undefined;
      return row && toProject(row);
    },
    async listProjects(organizationId) {
      const rows = organizationId === undefined ? s.allProjects.all() : s.projectsOf.all(organizationId);
      return (rows as ProjectRow[]).map(toProject);
    },
    async projectSummaries() {
      return (s.projectSummaries.all() as ProjectRow[]).map((row) => ({ ...toProject(row), emails: JSON.parse(row.emails ?? "[]") as string[] }));
    },
    async updateProject(id, change) {
      s.updateProject.run({
        id,
        name: change.name ?? null,
        plan: change.plan ?? null,
        set_retention: change.retentionDays === undefined ? 0 : 1,
        retention_days: change.retentionDays ?? null,
        time_zone: change.timeZone ?? null,
      });
      return this.getProject(id);
    },
    async deleteProject(id) {
      return deleteProject.immediate(id);
    },
    async defaultProject(plan) {
      const id = `prj_default-${plan}`;
      db.transaction(() => {
        s.insertDefaultOrganization.run(Date.now());
        s.insertDefaultProject.run({ id, name: `default (${plan})`, plan, now: Date.now() });
      }).immediate();
      return toProject(s.projectById.get(id) as ProjectRow);
    },
    async getMembership(organizationId, userId) {
      const row = s.membership.get(organizationId, userId) as MembershipRow | undefined;
      return row && toMembership(row);
    },
    async listMembers(organizationId) {
      return (s.members.all(organizationId) as MembershipRow[]).map(toMembership);
    },
    async addMember(organizationId, userId, role) {
      try {
        s.insertMembership.run(organizationId, userId, role, Date.now());
      } catch (error) {
        if ((error as { code?: string }).code?.startsWith("SQLITE_CONSTRAINT")) throw new AlreadyMemberError();
        throw error;
      }
      return toMembership(s.membership.get(organizationId, userId) as MembershipRow);
    },
    async setRole(organizationId, userId, role) {
      return setRole.immediate(organizationId, userId, role);
    },
    async removeMember(organizationId, userId) {
      return removeMember.immediate(organizationId, userId);
    },
    async createInvitation(input) {
      const id = newId("inv");
      s.insertInvitation.run({
        id,
        organization_id: input.organizationId,
        email: input.email,
        role: input.role,
        token_hash: input.tokenHash,
        invited_by: input.invitedBy,
        created_at: Date.now(),
        expires_at: input.expiresAt.getTime(),
      });
      return toInvitation(s.invitationById.get(id) as InvitationRow);
    },
    async listInvitations(organizationId) {
      return (s.invitations.all(organizationId) as InvitationRow[]).map(toInvitation);
    },
    async findInvitation(tokenHash) {
      const row = s.invitationByToken.get(tokenHash) as InvitationRow | undefined;
      return row && toInvitation(row);
    },
    async revokeInvitation(organizationId, id) {
      if (s.revokeInvitation.run(Date.now(), organizationId, id).changes === 0) return undefined;
      return toInvitation(s.invitationById.get(id) as InvitationRow);
    },
    async acceptInvitation(tokenHash, userId, now) {
      return acceptInvitation.immediate(tokenHash, userId, now);
    },
    async appendAudit(entry) {
      const stored: AuditEntry = { ...entry, id: newId("aud"), at: entry.at ?? new Date() };
      s.insertAudit.run({
        id: stored.id,
        organization_id: stored.organizationId,
        project_id: stored.projectId,
        actor: stored.actor,
        action: stored.action,
        target: stored.target,
        details: JSON.stringify(stored.details),
        at: stored.at.getTime(),
      });
      return stored;
    },
    async listAudit(organizationId, { limit, before }) {
      return (s.auditPage.all({ organization_id: organizationId, before: before ?? null, limit }) as AuditRow[]).map(toAudit);
    },
  };
}

function toOrganization(row: OrganizationRow): OrganizationRecord {
  return { id: row.id, name: row.name, createdAt: new Date(row.created_at), joinDomain: row.join_domain, joinRole: row.join_role as Role };
}

function toProject(row: ProjectRow): ProjectRecord {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    plan: row.plan,
    retentionDays: row.retention_days ?? undefined,
    timeZone: row.time_zone,
    createdAt: new Date(row.created_at),
  };
}

function toMembership(row: MembershipRow): MembershipRecord {
  return { organizationId: row.organization_id, userId: row.user_id, email: row.email, role: row.role as Role, createdAt: new Date(row.created_at) };
}

function toInvitation(row: InvitationRow): InvitationRecord {
  return {
    id: row.id,
    organizationId: row.organization_id,
    email: row.email,
    role: row.role as Role,
    tokenHash: row.token_hash,
    invitedBy: row.invited_by,
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
    acceptedAt: row.accepted_at === null ? undefined : new Date(row.accepted_at),
    revokedAt: row.revoked_at === null ? undefined : new Date(row.revoked_at),
  };
}

function toAudit(row: AuditRow): AuditEntry {
  return {
    id: row.id,
    organizationId: row.organization_id,
    projectId: row.project_id,
    actor: row.actor,
    action: row.action,
    target: row.target,
    details: JSON.parse(row.details) as Record<string, string>,
    at: new Date(row.at),
  };
}
