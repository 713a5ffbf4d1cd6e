import { hasRole, type Role } from "../store/team-store.js";

/**
 * The permission matrix of docs/teams.md: the least role that may do each thing. One table, read
 * by the access interceptor for every RPC and route; the docs' table is checked against it
 * (test/teams/permission-matrix.test.ts).
 */
export const leastRole = {
  /** Traces, usage, downloads, the project's keys (without secrets), members and projects. */
  "project.read": "viewer",
  /** Create, rename and revoke the project's API keys. */
  "keys.manage": "member",
  /** Create, list and revoke invitations. */
  "members.invite": "admin",
  /** Change roles and remove members (owners only for owners). */
  "members.manage": "admin",
  /** Create projects; change a project's name, retention and time zone. */
  "project.settings": "admin",
  /** Rename the organization, set its single sign-on join domain. */
  "organization.settings": "admin",
  /** Read and download the audit log. */
  "audit.read": "admin",
  "project.delete": "owner",
  "organization.delete": "owner",
  "ownership.transfer": "owner",
} as const satisfies Record<string, Role>;

export type Permission = keyof typeof leastRole;

export function allows(role: Role, permission: Permission): boolean {
  return hasRole(role, leastRole[permission]);
}

/**
 * Whether an actor may give `target` (a member's current role, or undefined for a newcomer) the
 * role `to` (undefined: remove them): only owners make, unmake or remove owners.
 */
export function mayChangeMember(actor: Role, target: Role | undefined, to: Role | undefined): boolean {
  if (!allows(actor, "members.manage")) return false;
  return actor === "owner" || (target !== "owner" && to !== "owner");
}
