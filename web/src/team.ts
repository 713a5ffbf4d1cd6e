import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { Session } from "../../gen/calltrace/v1/auth_service_pb.js";
import { type OrganizationMembership, type Project, Role } from "../../gen/calltrace/v1/team_service_pb.js";
import { allows, mayChangeMember, type Permission } from "../../src/teams/permissions.js";
import type { Role as RoleName } from "../../src/store/team-store.js";

/** The roles strongest first, as the contract names them and as people read them. */
export const roles: readonly { role: Role; name: RoleName }[] = [
  { role: Role.OWNER, name: "owner" },
  { role: Role.ADMIN, name: "admin" },
  { role: Role.MEMBER, name: "member" },
  { role: Role.VIEWER, name: "viewer" },
];

export function roleName(role: Role): RoleName {
  return roles.find((r) => r.role === role)?.name ?? "viewer";
}

/**
 * What the signed-in user may do in the current organization: the server's own permission matrix
 * (src/teams/permissions.ts), so the UI hides exactly what the server would refuse.
 */
export function can(role: Role, permission: Permission): boolean {
  return allows(roleName(role), permission);
}

/** Whether an actor may give a member (undefined: a newcomer) the role `to` (undefined: remove them). */
export function mayChange(actor: Role, target: Role | undefined, to: Role | undefined): boolean {
  return mayChangeMember(roleName(actor), target === undefined ? undefined : roleName(target), to === undefined ? undefined : roleName(to));
}

/** The signed-in user's organizations and the project the URL names. */
export interface Team {
  session: Session;
  memberships: OrganizationMembership[];
  membership: OrganizationMembership;
  project: Project;
  /** Reads the organizations again (after a change to them), answering the fresh list. */
  reload: () => Promise<OrganizationMembership[]>;
}

export const TeamContext = createContext<Team | undefined>(undefined);

/** The current team; only pages under a project are rendered, so it is always there. */
export function useTeam(): Team {
  const team = useContext(TeamContext);
  if (!team) throw new Error("useTeam outside a project page");
  return team;
}

/** The membership and project of a project id, if the user may see it. */
export function findProject(memberships: OrganizationMembership[], projectId: string): { membership: OrganizationMembership; project: Project } | undefined {
  for (const membership of memberships) {
    const project = membership.projects.find((p) => p.id === projectId);
    if (project) return { membership, project };
  }
  return undefined;
}

const lastProjectKey = "calltrace.lastProject";

/** Remembers the project last opened, as the default for /app/ (only a default: the URL decides). */
export function rememberProject(projectId: string): void {
  try {
    localStorage.setItem(lastProjectKey, projectId);
  } catch {
    // Storage refused (private mode): the session's default project serves instead.
  }
}

/** The project /app/ opens: the last one used if still visible, else the session's, else the first. */
export function defaultProject(memberships: OrganizationMembership[], session: Session): Project | undefined {
  let last: string | null = null;
  try {
    last = localStorage.getItem(lastProjectKey);
  } catch {
    last = null;
  }
  return (
    (last ? findProject(memberships, last)?.project : undefined) ??
    findProject(memberships, session.accountId)?.project ??
    memberships.flatMap((m) => m.projects)[0]
  );
}
