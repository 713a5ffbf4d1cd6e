import type { DescService } from "@bufbuild/protobuf";
import { AccountService } from "../../gen/calltrace/v1/account_service_pb.js";
import { AlertService } from "../../gen/calltrace/v1/alert_service_pb.js";
import { AuthService } from "../../gen/calltrace/v1/auth_service_pb.js";
import { QueryService } from "../../gen/calltrace/v1/query_service_pb.js";
import { PriceService } from "../../gen/calltrace/v1/price_service_pb.js";
import { TeamService } from "../../gen/calltrace/v1/team_service_pb.js";
import type { Permission } from "./permissions.js";

/**
 * What each dashboard RPC needs, by its procedure path:
 * - `public`: nothing (it authenticates on its own terms, as log-in does);
 * - `user`: a dashboard session, acting on the user's own things;
 * - `project`: the permission in the project of the request's `project_id`; `readKey` also lets a
 *   read-scoped API key in, for its own project;
 * - `organization`: the permission in the organization of the request's `organization_id`.
 * A procedure missing here is refused (test/teams/isolation.test.ts walks every one).
 */
export type RpcPolicy =
  | { kind: "public" }
  | { kind: "user" }
  | { kind: "project"; permission: Permission; readKey?: true }
  | { kind: "organization"; permission: Permission };

const projectRead = { kind: "project", permission: "project.read", readKey: true } as const;

export const rpcPolicies: Record<string, RpcPolicy> = {
  ...policiesOf(AuthService, { signUp: { kind: "public" }, logIn: { kind: "public" }, logOut: { kind: "public" }, getSession: { kind: "public" } }),
  ...policiesOf(QueryService, {
    listTraces: projectRead,
    getUsageTotals: projectRead,
    getUsageByModel: projectRead,
    getUsageByDay: projectRead,
    getUsageByDayTotals: projectRead,
    getUsageByHourTotals: projectRead,
    getUsageByCountry: projectRead,
    getLatencyHistogram: projectRead,
    getUsageByGroup: projectRead,
    getUsageByGroupAndDay: projectRead,
    getTrace: projectRead,
    getErrorGroups: projectRead,
    listRuns: projectRead,
    getRun: projectRead,
  }),
  ...policiesOf(AccountService, {
    getAccount: { kind: "project", permission: "project.read" },
    listKeys: { kind: "project", permission: "project.read" },
    createKey: { kind: "project", permission: "keys.manage" },
    revokeKey: { kind: "project", permission: "keys.manage" },
    renameKey: { kind: "project", permission: "keys.manage" },
    listSessions: { kind: "user" },
    logOutEverywhere: { kind: "user" },
    changePassword: { kind: "user" },
    deleteAccount: { kind: "user" },
  }),
  ...policiesOf(TeamService, {
    listOrganizations: { kind: "user" },
    createOrganization: { kind: "user" },
    updateOrganization: { kind: "organization", permission: "organization.settings" },
    deleteOrganization: { kind: "organization", permission: "organization.delete" },
    createProject: { kind: "organization", permission: "project.settings" },
    updateProject: { kind: "project", permission: "project.settings" },
    deleteProject: { kind: "project", permission: "project.delete" },
    listMembers: { kind: "organization", permission: "project.read" },
    // Any member may remove themselves; removing another is checked against mayChangeMember.
    setMemberRole: { kind: "organization", permission: "members.manage" },
    removeMember: { kind: "organization", permission: "project.read" },
    transferOwnership: { kind: "organization", permission: "ownership.transfer" },
    createInvitation: { kind: "organization", permission: "members.invite" },
    listInvitations: { kind: "organization", permission: "members.invite" },
    revokeInvitation: { kind: "organization", permission: "members.invite" },
    getInvitation: { kind: "public" },
    acceptInvitation: { kind: "user" },
    listAuditLog: { kind: "organization", permission: "audit.read" },
  }),
  // Custom prices are project settings (docs/teams.md): viewers read them, admins change them.
  ...policiesOf(PriceService, {
    listPrices: { kind: "project", permission: "project.read" },
    resolvePrice: { kind: "project", permission: "project.read" },
    getReprice: { kind: "project", permission: "project.read" },
    createPrice: { kind: "project", permission: "project.settings" },
    updatePrice: { kind: "project", permission: "project.settings" },
    deletePrice: { kind: "project", permission: "project.settings" },
    startReprice: { kind: "project", permission: "project.settings" },
  }),
  // Alert rules and destinations are project settings: viewers read them, admins change them.
  ...policiesOf(AlertService, {
    listRules: { kind: "project", permission: "project.read" },
    createRule: { kind: "project", permission: "project.settings" },
    updateRule: { kind: "project", permission: "project.settings" },
    muteRule: { kind: "project", permission: "project.settings" },
    deleteRule: { kind: "project", permission: "project.settings" },
    listEvents: { kind: "project", permission: "project.read" },
    listDestinations: { kind: "project", permission: "project.read" },
    createDestination: { kind: "project", permission: "project.settings" },
    deleteDestination: { kind: "project", permission: "project.settings" },
    rotateDestinationSecret: { kind: "project", permission: "project.settings" },
    enableDestination: { kind: "project", permission: "project.settings" },
    listDeliveries: { kind: "project", permission: "project.read" },
    resendDelivery: { kind: "project", permission: "project.settings" },
    sendTestEvent: { kind: "project", permission: "project.settings" },
  }),
};

/** A service's policies keyed by procedure path; the type asks for every method of the service. */
function policiesOf<S extends DescService>(service: S, byMethod: { [M in keyof S["method"]]: RpcPolicy }): Record<string, RpcPolicy> {
  return Object.fromEntries(
    Object.entries(byMethod).map(([name, policy]) => [`/${service.typeName}/${service.method[name]!.name}`, policy as RpcPolicy]),
  );
}
