import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { KeyVerifier } from "../auth/key-verifier.js";
import { authRateLimited } from "../ingest/ingest-errors.js";
import { clientAddressKey } from "../ingest/trace-service.js";
import type { AuthFailureLimiter } from "../limits/auth-failure-limiter.js";
import { assertSameOrigin } from "../dashboard/same-origin.js";
import type { Sessions, SignedIn } from "../dashboard/sessions.js";
import type { ApiKeyRecord } from "../store/records.js";
import type { TeamStore } from "../store/team-store.js";
import { clientAddress } from "../server/client-address.js";
import type { NodeRequest } from "../server/node-types.js";
import { accessKey, notFound, type Access } from "./access.js";
import { allows, leastRole, type Permission } from "./permissions.js";
import { rpcPolicies, type RpcPolicy } from "./rpc-policies.js";

export interface AccessDeps {
  sessions: Sessions;
  teams: TeamStore;
  verifier: KeyVerifier;
  /**
   * Counts a read key's call against its read limit: answers the rate-limit headers, or throws
   * RESOURCE_EXHAUSTED carrying them.
   */
  limitRead: (key: ApiKeyRecord) => Promise<Record<string, string>>;
  /** Counts an unknown key's failed authentication against its address, as ingest does (D12). */
  authFailures: AuthFailureLimiter;
  /** Whether X-Forwarded-For names the client (TRUST_PROXY), for the HTTP routes' addresses. */
  trustProxy: boolean;
}

/**
 * The one place that decides who may call which dashboard RPC (docs/teams.md): it finds the
 * caller (a session, or a read key on the calls that take one), the project or organization the
 * request names, and the caller's role there, refuses what the role does not allow, and puts
 * the outcome in the call's context (access.ts). Handlers never check roles themselves. The
 * membership is read from the store on every call, so a removed or demoted member loses the
 * access at once, on every instance.
 */
export function accessInterceptor(deps: AccessDeps): Interceptor {
  return (next) => async (req) => {
    const policy = rpcPolicies[`/${req.service.typeName}/${req.method.name}`];
    if (!policy) throw new ConnectError(`no access policy for ${req.method.name}`, Code.PermissionDenied);
    if (policy.kind === "public") return next(req);
    const message = (req.stream ? {} : req.message) as { projectId?: string; organizationId?: string };
    const address = req.contextValues.get(clientAddressKey);
    const { access, headers } = await authorize(deps, policy, req.header, req.url, message, true, address);
    req.contextValues.set(accessKey, access);
    const res = await next(req);
    for (const [name, value] of Object.entries(headers)) res.header.set(name, value);
    return res;
  };
}

/**
 * The access a request gets under a policy, from its session (with `requireCsrf`, the CSRF
 * header too) or, where the policy lets read keys in, its `Authorization: Bearer` read key, whose
 * read limit it also counts (the rate-limit headers are answered); an unknown key counts against
 * the client's `address` (D12). Shared by the RPCs and the dashboard's HTTP routes (downloads).
 */
export async function authorize(
  deps: AccessDeps,
  policy: Exclude<RpcPolicy, { kind: "public" }>,
  header: Headers,
  url: string,
  message: { projectId?: string; organizationId?: string },
  requireCsrf: boolean,
  address: string | undefined,
): Promise<{ access: Access; headers: Record<string, string> }> {
  const bearer = bearerToken(header);
  if (bearer === undefined) {
    assertSameOrigin(header, url);
    const user = await deps.sessions.authenticate(header, requireCsrf);
    return { access: await sessionAccess(deps.teams, policy, user, message), headers: {} };
  }
  if (policy.kind !== "project" || !policy.readKey) {
    throw new ConnectError("this call needs a dashboard session, not an API key", Code.Unauthenticated);
  }
  const access = await keyAccess(deps, bearer, message.projectId ?? "", address);
  return { access, headers: await deps.limitRead(access.key!) };
}

/** The client address of a dashboard HTTP route's request (downloads, the read API), as the limits count it. */
export function requestAddress(deps: Pick<AccessDeps, "trustProxy">, req: NodeRequest): string | undefined {
  return clientAddress(req.headers, req.socket?.remoteAddress, deps.trustProxy);
}

/** The token of an `Authorization: Bearer` header, if there is one. */
export function bearerToken(header: Headers): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(header.get("authorization") ?? "")?.[1];
}

/**
 * A read key's access to its own project: an unknown, revoked or expired key is UNAUTHENTICATED,
 * or RESOURCE_EXHAUSTED once its address has failed too often (D12); an ingest key is
 * PERMISSION_DENIED naming the scope it lacks; another project's id is NOT_FOUND.
 */
export async function keyAccess(
  deps: Pick<AccessDeps, "verifier" | "teams" | "authFailures">,
  plaintext: string,
  projectId: string,
  address: string | undefined,
): Promise<Extract<Access, { kind: "project" }>> {
  const key = await deps.verifier.verify(plaintext);
  if (!key) {
    const wait = await deps.authFailures.failed(address);
    throw wait === undefined ? new ConnectError("Invalid API key", Code.Unauthenticated) : authRateLimited(wait);
  }
  if (key.scope !== "read") {
    throw new ConnectError(`this API key's scope is ${key.scope}; reading needs a key with the read scope`, Code.PermissionDenied);
  }
  if (projectId !== "" && projectId !== key.accountId) throw notFound("project", projectId);
  const project = await deps.teams.getProject(key.accountId);
  if (!project) throw new ConnectError("Invalid API key", Code.Unauthenticated);
  return { kind: "project", user: undefined, project, role: "viewer", key };
}

async function sessionAccess(
  teams: TeamStore,
  policy: Exclude<RpcPolicy, { kind: "public" }>,
  user: SignedIn,
  message: { projectId?: string; organizationId?: string },
): Promise<Access> {
  if (policy.kind === "user") return { kind: "user", user };
  if (policy.kind === "project") {
    const projectId = message.projectId ?? "";
    if (projectId === "") throw new ConnectError("project_id: required", Code.InvalidArgument);
    const project = await teams.getProject(projectId);
    const membership = project && (await teams.getMembership(project.organizationId, user.userId));
    if (!project || !membership) throw notFound("project", projectId);
    permit(membership.role, policy.permission);
    return { kind: "project", user, project, role: membership.role, key: undefined };
  }
  const organizationId = message.organizationId ?? "";
  if (organizationId === "") throw new ConnectError("organization_id: required", Code.InvalidArgument);
  const [organization, membership] = await Promise.all([teams.getOrganization(organizationId), teams.getMembership(organizationId, user.userId)]);
  if (!organization || !membership) throw notFound("organization", organizationId);
  permit(membership.role, policy.permission);
  return { kind: "organization", user, organization, role: membership.role };
}

/** PERMISSION_DENIED, saying which role the call needs, unless `role` allows it. */
export function permit(role: Parameters<typeof allows>[0], permission: Permission): void {
  if (!allows(role, permission)) {
    throw new ConnectError(`your role is ${role}; this needs ${leastRole[permission]} or above`, Code.PermissionDenied);
  }
}
