import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  AcceptInvitationResponseSchema,
  CreateInvitationResponseSchema,
  CreateOrganizationResponseSchema,
  CreateProjectResponseSchema,
  DeleteOrganizationResponseSchema,
  DeleteProjectResponseSchema,
  GetInvitationResponseSchema,
  InvitationSchema,
  ListAuditLogResponseSchema,
  ListInvitationsResponseSchema,
  ListMembersResponseSchema,
  ListOrganizationsResponseSchema,
  MemberSchema,
  OrganizationSchema,
  ProjectSchema,
  RemoveMemberResponseSchema,
  RevokeInvitationResponseSchema,
  Role as RoleEnum,
  SetMemberRoleResponseSchema,
  TransferOwnershipResponseSchema,
  UpdateOrganizationResponseSchema,
  UpdateProjectResponseSchema,
  type TeamService,
} from "../../gen/calltrace/v1/team_service_pb.js";
import type { Plans } from "../config/plans.js";
import { clientAddress } from "../dashboard/auth-service.js";
import { tooManyAttempts } from "../dashboard/too-many-attempts.js";
import { LastOwnerError, type MembershipRecord, type OrganizationRecord, type ProjectRecord, type Role, type TeamStore } from "../store/team-store.js";
import type { UserStore } from "../store/user-store.js";
import { notFound, organizationAccess, projectAccess, userAccess } from "./access.js";
import { permit } from "./access-interceptor.js";
import { auditEntryMessage, type AuditTrail } from "./audit-trail.js";
import { invitations, type InvitationMailer } from "./invitations.js";
import { mayChangeMember } from "./permissions.js";
import type { ProjectDeletion } from "./project-deletion.js";

export interface TeamServiceDeps {
  teams: TeamStore;
  users: UserStore;
  plans: Plans;
  audit: AuditTrail;
  deletion: ProjectDeletion;
  /** RETENTION_DAYS: a project may keep its traces for less, never for more (0: any). */
  retentionDays: number;
  /** Sends an invitation's link when mail is configured (SMTP_URL). */
  mailer?: InvitationMailer | undefined;
  /** Where invitation links point; the request's own origin when unset (PUBLIC_URL). */
  publicUrl?: string | undefined;
  /** Guesses at invitation tokens per client address, counted as log-in attempts are. */
  tokenAttempts: { take(address: string): Promise<number> };
}

const roleToEnum: Record<Role, RoleEnum> = { owner: RoleEnum.OWNER, admin: RoleEnum.ADMIN, member: RoleEnum.MEMBER, viewer: RoleEnum.VIEWER };
const roleOf = (value: RoleEnum): Role => {
  const role = (Object.keys(roleToEnum) as Role[]).find((r) => roleToEnum[r] === value);
  if (!role) throw new ConnectError("role: must be one of owner, admin, member, viewer", Code.InvalidArgument);
  return role;
};

/** TeamService: organizations, projects, members, invitations and the audit log, as the access interceptor allows. */
export function teamService(deps: TeamServiceDeps): ServiceImpl<typeof TeamService> {
  const { teams } = deps;
  const invites = invitations(deps);
  const member = async (organizationId: string, userId: string): Promise<MembershipRecord> => {
    const found = await teams.getMembership(organizationId, userId);
    if (!found) throw notFound("member", userId);
    return found;
  };
  const ownerKept = <T>(change: Promise<T>): Promise<T> =>
    change.catch((error: unknown) => {
      if (error instanceof LastOwnerError) throw new ConnectError(error.message, Code.FailedPrecondition);
      throw error;
    });

  return {
    async listOrganizations(_request, context) {
      const user = userAccess(context);
      const memberships = await teams.organizationsOf(user.userId);
      return create(ListOrganizationsResponseSchema, {
        organizations: await Promise.all(
          memberships.map(async ({ organization, role }) => ({
            organization: organizationMessage(organization),
            role: roleToEnum[role],
            projects: (await teams.listProjects(organization.id)).map(projectMessage),
          })),
        ),
      });
    },
    async createOrganization(request, context) {
      const user = userAccess(context);
      const plan = deps.plans.has("free") ? "free" : [...deps.plans.keys()][0]!;
      const name = trimmed(request.name, "name");
      const { organization, project } = await teams.createOrganization({
        name,
        ownerUserId: user.userId,
        project: { name: request.projectName.trim() || "Default", plan },
      });
      await deps.audit({ kind: "organization", user, organization, role: "owner" }, "organization.create", organization.id, { name });
      return create(CreateOrganizationResponseSchema, { organization: organizationMessage(organization), project: projectMessage(project) });
    },
    async updateOrganization(request, context) {
      const access = organizationAccess(context);
      const joinRole = request.joinRole === RoleEnum.UNSPECIFIED ? undefined : roleOf(request.joinRole);
      const updated = await teams.updateOrganization(access.organization.id, {
        ...(request.name !== undefined ? { name: trimmed(request.name, "name") } : {}),
        ...(request.joinDomain !== undefined ? { joinDomain: request.joinDomain } : {}),
        ...(joinRole ? { joinRole } : {}),
      });
      if (!updated) throw notFound("organization", access.organization.id);
      await deps.audit(access, "organization.update", updated.id, {
        name: updated.name,
        join_domain: updated.joinDomain,
        join_role: updated.joinRole,
      });
      return create(UpdateOrganizationResponseSchema, { organization: organizationMessage(updated) });
    },
    async deleteOrganization(_request, context) {
      const access = organizationAccess(context);
      await deps.deletion.deleteOrganization(access.organization.id);
      return create(DeleteOrganizationResponseSchema);
    },
    async createProject(request, context) {
      const access = organizationAccess(context);
      const [first] = await teams.listProjects(access.organization.id);
      const plan = first?.plan ?? (deps.plans.has("free") ? "free" : [...deps.plans.keys()][0]!);
      const project = await teams.createProject({ organizationId: access.organization.id, name: trimmed(request.name, "name"), plan });
      await deps.audit({ ...access, kind: "project", project, key: undefined }, "project.create", project.id, { name: project.name });
      return create(CreateProjectResponseSchema, { project: projectMessage(project) });
    },
    async updateProject(request, context) {
      const access = projectAccess(context);
      const retention = request.retentionDays;
      if (retention !== undefined && retention > 0 && deps.retentionDays > 0 && retention > deps.retentionDays) {
        throw new ConnectError(`retention_days: at most ${deps.retentionDays}, this server's RETENTION_DAYS`, Code.InvalidArgument);
      }
      if (request.timeZone !== undefined && request.timeZone !== "" && !isTimeZone(request.timeZone)) {
        throw new ConnectError(`time_zone: ${JSON.stringify(request.timeZone)} is not an IANA time zone`, Code.InvalidArgument);
      }
      const updated = await teams.updateProject(access.project.id, {
        ...(request.name !== undefined ? { name: trimmed(request.name, "name") } : {}),
        ...(retention !== undefined ? { retentionDays: retention === 0 ? null : retention } : {}),
        ...(request.timeZone !== undefined ? { timeZone: request.timeZone } : {}),
      });
      if (!updated) throw notFound("project", access.project.id);
      await deps.audit(access, "project.update", updated.id, {
        name: updated.name,
        retention_days: String(updated.retentionDays ?? 0),
        time_zone: updated.timeZone,
      });
      return create(UpdateProjectResponseSchema, { project: projectMessage(updated) });
    },
    async deleteProject(_request, context) {
      const access = projectAccess(context);
      if ((await teams.listProjects(access.project.organizationId)).length <= 1) {
        throw new ConnectError("an organization keeps at least one project: delete the organization instead", Code.FailedPrecondition);
      }
      await deps.deletion.deleteProject(access.project.id);
      await deps.audit(access, "project.delete", access.project.id, { name: access.project.name });
      return create(DeleteProjectResponseSchema);
    },
    async listMembers(_request, context) {
      const { organization } = organizationAccess(context);
      return create(ListMembersResponseSchema, { members: (await teams.listMembers(organization.id)).map(memberMessage) });
    },
    async setMemberRole(request, context) {
      const access = organizationAccess(context);
      const target = await member(access.organization.id, request.userId);
      const role = roleOf(request.role);
      if (!mayChangeMember(access.role, target.role, role)) throw new ConnectError("only owners make or unmake owners", Code.PermissionDenied);
      const updated = await ownerKept(teams.setRole(access.organization.id, target.userId, role));
      if (!updated) throw notFound("member", request.userId);
      await deps.audit(access, "member.role", target.email, { from: target.role, to: role });
      return create(SetMemberRoleResponseSchema, { member: memberMessage(updated) });
    },
    async removeMember(request, context) {
      const access = organizationAccess(context);
      const target = await member(access.organization.id, request.userId);
      const leaving = target.userId === access.user.userId;
      if (!leaving && !mayChangeMember(access.role, target.role, undefined)) {
        permit(access.role, "members.manage");
        throw new ConnectError("only owners remove owners", Code.PermissionDenied);
      }
      if (!(await ownerKept(teams.removeMember(access.organization.id, target.userId)))) throw notFound("member", request.userId);
      await deps.audit(access, leaving ? "member.leave" : "member.remove", target.email, { role: target.role });
      return create(RemoveMemberResponseSchema);
    },
    async transferOwnership(request, context) {
      const access = organizationAccess(context);
      const target = await member(access.organization.id, request.userId);
      if (target.userId === access.user.userId) throw new ConnectError("user_id: you own this organization already", Code.InvalidArgument);
      await teams.setRole(access.organization.id, target.userId, "owner");
      await ownerKept(teams.setRole(access.organization.id, access.user.userId, "admin"));
      await deps.audit(access, "ownership.transfer", target.email, { from: access.user.email });
      return create(TransferOwnershipResponseSchema);
    },
    async createInvitation(request, context) {
      const access = organizationAccess(context);
      const role = roleOf(request.role);
      if (role === "owner" && access.role !== "owner") throw new ConnectError("only owners invite owners", Code.PermissionDenied);
      const created = await invites.create(access, request.email, role, request.expiresInDays || 7, linkBase(deps.publicUrl, context));
      await deps.audit(access, "invitation.create", created.invitation.email, { role, invitation: created.invitation.id, mailed: String(created.mailed) });
      return create(CreateInvitationResponseSchema, {
        invitation: invitationMessage(created.invitation, access.user.email),
        url: created.url,
        mailed: created.mailed,
      });
    },
    async listInvitations(_request, context) {
      const { organization } = organizationAccess(context);
      const pending = await teams.listInvitations(organization.id);
      const inviters = new Map((await teams.listMembers(organization.id)).map((m) => [m.userId, m.email]));
      return create(ListInvitationsResponseSchema, {
        invitations: pending.map((i) => invitationMessage(i, inviters.get(i.invitedBy) ?? "")),
      });
    },
    async revokeInvitation(request, context) {
      const access = organizationAccess(context);
      const revoked = await teams.revokeInvitation(access.organization.id, request.invitationId);
      if (!revoked) throw notFound("invitation", request.invitationId);
      await deps.audit(access, "invitation.revoke", revoked.email, { invitation: revoked.id });
      return create(RevokeInvitationResponseSchema);
    },
    async getInvitation(request, context) {
      await throttle(deps, context);
      const { invitation, organization } = await invites.pending(request.token);
      return create(GetInvitationResponseSchema, {
        organizationName: organization.name,
        email: invitation.email,
        role: roleToEnum[invitation.role],
        expiresAt: timestampFromDate(invitation.expiresAt),
      });
    },
    async acceptInvitation(request, context) {
      await throttle(deps, context);
      const user = userAccess(context);
      const { organization, role } = await invites.accept(request.token, user);
      return create(AcceptInvitationResponseSchema, { organization: organizationMessage(organization), role: roleToEnum[role] });
    },
    async listAuditLog(request, context) {
      const { organization } = organizationAccess(context);
      const entries = await teams.listAudit(organization.id, { limit: request.limit || 100, ...(request.before ? { before: request.before } : {}) });
      return create(ListAuditLogResponseSchema, {
        entries: entries.map(auditEntryMessage),
      });
    },
  };
}

/** Token guesses cost attempts as password guesses do (RESOURCE_EXHAUSTED past the limit). */
async function throttle(deps: Pick<TeamServiceDeps, "tokenAttempts">, context: HandlerContext): Promise<void> {
  const wait = await deps.tokenAttempts.take(clientAddress(context));
  if (wait > 0) throw tooManyAttempts("too many invitation attempts", wait);
}

function linkBase(publicUrl: string | undefined, context: HandlerContext): string {
  return (publicUrl ?? new URL(context.url).origin).replace(/\/+$/, "");
}

function trimmed(value: string, field: string): string {
  const name = value.trim();
  if (!name) throw new ConnectError(`${field}: must not be blank`, Code.InvalidArgument);
  return name;
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

function organizationMessage(o: OrganizationRecord) {
  return create(OrganizationSchema, {
    id: o.id,
    name: o.name,
    createdAt: timestampFromDate(o.createdAt),
    joinDomain: o.joinDomain,
    joinRole: roleToEnum[o.joinRole],
  });
}

function projectMessage(p: ProjectRecord) {
  return create(ProjectSchema, {
    id: p.id,
    organizationId: p.organizationId,
    name: p.name,
    plan: p.plan,
    retentionDays: p.retentionDays ?? 0,
    timeZone: p.timeZone,
    createdAt: timestampFromDate(p.createdAt),
  });
}

function memberMessage(m: MembershipRecord) {
  return create(MemberSchema, { userId: m.userId, email: m.email, role: roleToEnum[m.role], joinedAt: timestampFromDate(m.createdAt) });
}

function invitationMessage(i: { id: string; organizationId: string; email: string; role: Role; createdAt: Date; expiresAt: Date }, invitedBy: string) {
  return create(InvitationSchema, {
    id: i.id,
    organizationId: i.organizationId,
    email: i.email,
    role: roleToEnum[i.role],
    createdAt: timestampFromDate(i.createdAt),
    expiresAt: timestampFromDate(i.expiresAt),
    invitedBy,
  });
}
