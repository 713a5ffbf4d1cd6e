/**
 * Organizations, their members and projects, invitations and the audit log (docs/teams.md).
 * The project is the unit of data: keys, traces, roll-ups and retention belong to it. A project's
 * id is what traces, keys and roll-ups call `account_id`: the accounts of earlier releases became
 * projects with the same ids, so no trace or roll-up row was rewritten by the upgrade (D50).
 */

/** A member's role in an organization, strongest first. */
export type Role = "owner" | "admin" | "member" | "viewer";
export const roles: readonly Role[] = ["owner", "admin", "member", "viewer"];

export function isRole(value: string): value is Role {
  return (roles as readonly string[]).includes(value);
}

/** Whether `role` is at least as strong as `least`. */
export function hasRole(role: Role, least: Role): boolean {
  return roles.indexOf(role) <= roles.indexOf(least);
}

export function strongerRole(a: Role, b: Role): Role {
  return hasRole(a, b) ? a : b;
}

export interface OrganizationRecord {
  id: string;
  name: string;
  createdAt: Date;
  /** People who sign in with single sign-on from this email domain join with `joinRole`; "" for none. */
  joinDomain: string;
  joinRole: Role;
}

export interface ProjectRecord {
  id: string;
  organizationId: string;
  name: string;
  /** Its keys' plan (D19): limits still count per key. */
  plan: string;
  /** Days its traces are kept; undefined follows RETENTION_DAYS. */
  retentionDays: number | undefined;
  /** An IANA time zone for calendar windows (alerts); "" is UTC. */
  timeZone: string;
  createdAt: Date;
}

/** A project with its organization's members' emails, for `calltrace accounts list`. */
export interface ProjectSummary extends ProjectRecord {
  emails: string[];
}

export interface MembershipRecord {
  organizationId: string;
  userId: string;
  email: string;
  role: Role;
  createdAt: Date;
}

export interface InvitationRecord {
  id: string;
  organizationId: string;
  /** Lower-cased; only a user signed in with this address may accept. */
  email: string;
  role: Role;
  /** The link's token is stored only as its SHA-256. */
  tokenHash: string;
  invitedBy: string;
  createdAt: Date;
  expiresAt: Date;
  acceptedAt: Date | undefined;
  revokedAt: Date | undefined;
}

export interface AuditEntry {
  id: string;
  organizationId: string;
  /** "" for what concerns the organization as a whole. */
  projectId: string;
  /** Who did it: a user's email, `cli`, or `sso`. */
  actor: string;
  /** What happened, e.g. `key.create`, `member.role`, `sso.sign_in`. */
  action: string;
  /** What it was done to: a key, member or invitation id, an email; "" when the action says it all. */
  target: string;
  /** A few more facts, such as the old and new role; never a secret. */
  details: Record<string, string>;
  at: Date;
}

export type NewAuditEntry = Omit<AuditEntry, "id" | "at"> & { at?: Date };

/** Thrown when a change would leave an organization without an owner. */
export class LastOwnerError extends Error {
  constructor() {
    super("an organization must keep at least one owner");
  }
}

/** Thrown by addMember when the user is a member already. */
export class AlreadyMemberError extends Error {
  constructor() {
    super("the user is a member of this organization already");
  }
}

/** What became of an attempt to accept an invitation. */
export type AcceptOutcome =
  | { kind: "accepted"; invitation: InvitationRecord }
  | { kind: "unusable"; reason: "unknown" | "accepted" | "revoked" | "expired" };

/** Implemented by every store adapter; the contract suite (test/store/team-contract.test.ts) holds them to it. */
export interface TeamStore {
  /** A new organization with its first project, and `ownerUserId` (when given) as its owner. */
  createOrganization(input: {
    name: string;
    ownerUserId?: string;
    project: { name: string; plan: string };
  }): Promise<{ organization: OrganizationRecord; project: ProjectRecord }>;
  getOrganization(id: string): Promise<OrganizationRecord | undefined>;
  updateOrganization(id: string, change: { name?: string; joinDomain?: string; joinRole?: Role }): Promise<OrganizationRecord | undefined>;
  /** Deletes the organization, its projects with all their data, its members, invitations and audit log. */
  deleteOrganization(id: string): Promise<boolean>;
  /** The organizations the user belongs to, with the user's role, oldest first. */
  organizationsOf(userId: string): Promise<Array<{ organization: OrganizationRecord; role: Role }>>;
  /** Organizations whose single sign-on join domain is `domain`. */
  organizationsJoinedBy(domain: string): Promise<OrganizationRecord[]>;

  createProject(input: { organizationId: string; name: string; plan: string }): Promise<ProjectRecord>;
  getProject(id: string): Promise<ProjectRecord | undefined>;
  /** Projects of one organization (or of all), oldest first. */
  listProjects(organizationId?: string): Promise<ProjectRecord[]>;
  /** Every project with the emails of its organization's members, oldest first. */
  projectSummaries(): Promise<ProjectSummary[]>;
  updateProject(
    id: string,
    change: { name?: string; plan?: string; retentionDays?: number | null; timeZone?: string },
  ): Promise<ProjectRecord | undefined>;
  /**
   * Deletes the project and everything of it: keys, traces and every roll-up or other record
   * that names the project or its keys. False when there was no such project (the rest is
   * deleted all the same, so it can be run again to sweep stragglers).
   */
  deleteProject(id: string): Promise<boolean>;
  /** The project that `keys create` without `--project` reaches for this plan, made on first use. */
  defaultProject(plan: string): Promise<ProjectRecord>;

  getMembership(organizationId: string, userId: string): Promise<MembershipRecord | undefined>;
  /** Oldest first. */
  listMembers(organizationId: string): Promise<MembershipRecord[]>;
  addMember(organizationId: string, userId: string, role: Role): Promise<MembershipRecord>;
  /** LastOwnerError when it would demote the last owner; undefined when there is no such member. */
  setRole(organizationId: string, userId: string, role: Role): Promise<MembershipRecord | undefined>;
  /** LastOwnerError when it would remove the last owner; false when there is no such member. */
  removeMember(organizationId: string, userId: string): Promise<boolean>;

  createInvitation(input: Omit<InvitationRecord, "id" | "createdAt" | "acceptedAt" | "revokedAt">): Promise<InvitationRecord>;
  /** Invitations of the organization not yet accepted or revoked, expired ones included, newest first. */
  listInvitations(organizationId: string): Promise<InvitationRecord[]>;
  findInvitation(tokenHash: string): Promise<InvitationRecord | undefined>;
  /** Revokes a pending invitation of this organization; undefined when there is none. */
  revokeInvitation(organizationId: string, id: string): Promise<InvitationRecord | undefined>;
  /**
   * Uses the invitation once, atomically, and makes the user a member with its role (a member
   * already keeps the stronger of the two roles). Anything but a pending, unexpired invitation
   * is unusable.
   */
  acceptInvitation(tokenHash: string, userId: string, now: Date): Promise<AcceptOutcome>;

  appendAudit(entry: NewAuditEntry): Promise<AuditEntry>;
  /** Newest first; `before` is an entry id from an earlier page. */
  listAudit(organizationId: string, page: { limit: number; before?: string }): Promise<AuditEntry[]>;
}
