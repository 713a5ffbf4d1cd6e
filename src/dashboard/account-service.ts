import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  type AccountService,
  ApiKeySchema,
  ChangePasswordResponseSchema,
  CreateKeyResponseSchema,
  DeleteAccountResponseSchema,
  GetAccountResponseSchema,
  ListKeysResponseSchema,
  ListSessionsResponseSchema,
  LogOutEverywhereResponseSchema,
  RenameKeyResponseSchema,
  RevokeKeyResponseSchema,
  SessionInfoSchema,
  type ApiKey,
  KeyScope,
} from "../../gen/calltrace/v1/account_service_pb.js";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { mintApiKey } from "../auth/api-key.js";
import { defaultMaxKeys, type Plans } from "../config/plans.js";
import type { Logger } from "../log/logger.js";
import { KeyLimitError, type KeyStore } from "../store/key-store.js";
import { isActiveKey, type ApiKeyRecord } from "../store/records.js";
import type { TraceReader } from "../store/trace-reader.js";
import type { TeamStore } from "../store/team-store.js";
import type { UserStore } from "../store/user-store.js";
import { projectAccess, userAccess } from "../teams/access.js";
import type { AuditTrail } from "../teams/audit-trail.js";
import type { ProjectDeletion } from "../teams/project-deletion.js";
import { clientAddress } from "./auth-service.js";
import { calendarMonth } from "./calendar-month.js";
import type { HashingGate } from "./hashing-gate.js";
import type { PasswordCheck } from "./password-check.js";
import { hashPassword } from "./password-hash.js";
import { setCookies } from "./response-cookies.js";
import { sessionIdOf, type Sessions, type SignedIn } from "./sessions.js";

export interface AccountServiceDeps {
  keys: KeyStore;
  users: UserStore;
  teams: TeamStore;
  audit: AuditTrail;
  deletion: ProjectDeletion;
  reader: TraceReader;
  plans: Plans;
  sessions: Sessions;
  checkPassword: PasswordCheck;
  gate: HashingGate;
  isSecure: (context: HandlerContext) => boolean;
  /** Told the hashes of keys that stopped working here, so this process's key cache forgets them at once. */
  onKeysRevoked?: (hashes: string[]) => void;
  logger?: Logger;
  now?: () => Date;
}

const blankName = () => new ConnectError("name: must not be blank", Code.InvalidArgument);

/** AccountService: a project's plan, usage and keys, and the signed-in user's password, sessions and account. */
export function accountService(deps: AccountServiceDeps): ServiceImpl<typeof AccountService> {
  const { keys, users, reader, plans, now = () => new Date() } = deps;
  /** Traces this calendar month (UTC), the window of the monthly quota (D11). */
  const callsThisMonth = async (accountId: string, keyId = "") => {
    const { start, end } = calendarMonth(now());
    const filter = create(TraceFilterSchema, { since: timestampFromDate(start), until: timestampFromDate(end), keyId });
    return (await reader.usageTotals(accountId, filter)).calls;
  };
  const ownKey = async (projectId: string, keyId: string) => {
    const key = (await keys.listKeys(projectId)).find((k) => k.id === keyId);
    if (!key) throw new ConnectError(`no key with id ${JSON.stringify(keyId)}`, Code.NotFound);
    return key;
  };
  const planOf = (project: { plan: string }) => {
    const plan = plans.get(project.plan);
    return { plan, maxKeys: plan?.maxKeys ?? defaultMaxKeys.free };
  };
  /** The signed-in user's password, checked under the log-in limits; PERMISSION_DENIED when wrong. */
  const confirmPassword = async (context: HandlerContext, user: SignedIn, password: string) => {
    const record = await users.getUser(user.userId);
    const ok = await deps.checkPassword({ email: user.email, address: clientAddress(context), password, storedHash: record?.passwordHash });
    if (!ok) throw new ConnectError("the password is wrong", Code.PermissionDenied);
  };
  const trimmedName = (name: string) => {
    const trimmed = name.trim();
    if (!trimmed) throw blankName();
    return trimmed;
  };

  return {
    async getAccount(_request, context) {
      const { project } = projectAccess(context);
      const accountId = project.id;
      const { plan, maxKeys } = planOf(project);
      const at = now();
      return create(GetAccountResponseSchema, {
        accountId,
        name: project.name,
        plan: project.plan,
        planPerMinute: BigInt(plan?.perMinute ?? 0),
        planPerMonth: BigInt(plan?.perMonth ?? 0),
        callsThisMonth: await callsThisMonth(accountId),
        monthResetsAt: timestampFromDate(calendarMonth(at).end),
        planMaxKeys: BigInt(maxKeys),
        activeKeys: BigInt((await keys.listKeys(accountId)).filter((k) => isActiveKey(k, at)).length),
      });
    },
    async listKeys(_request, context) {
      const accountId = projectAccess(context).project.id;
      const records = await keys.listKeys(accountId);
      const counts = await Promise.all(records.map((k) => callsThisMonth(accountId, k.id)));
      return create(ListKeysResponseSchema, { keys: records.map((k, i) => apiKey(k, counts[i]!)) });
    },
    async createKey(request, context) {
      const access = projectAccess(context);
      const { project } = access;
      const name = trimmedName(request.name);
      const expiresAt = request.expiresAt ? timestampDate(request.expiresAt) : undefined;
      if (expiresAt && expiresAt.getTime() <= now().getTime())
        throw new ConnectError("expires_at: must be in the future", Code.InvalidArgument);
      const { maxKeys } = planOf(project);
      const scope = request.scope === KeyScope.READ ? "read" : "ingest";
      const minted = mintApiKey();
      try {
        const key = await keys.createKey({ accountId: project.id, name, scope, hash: minted.hash, prefix: minted.prefix, expiresAt, maxActive: maxKeys });
        await deps.audit(access, "key.create", key.id, { name, scope, prefix: key.prefix });
        return create(CreateKeyResponseSchema, { key: apiKey(key, 0n), plaintext: minted.plaintext });
      } catch (error) {
        if (error instanceof KeyLimitError) throw keyLimitReached(project.plan, maxKeys);
        throw error;
      }
    },
    async revokeKey(request, context) {
      const access = projectAccess(context);
      const accountId = access.project.id;
      const key = await ownKey(accountId, request.keyId);
      const revoked = key.revokedAt ? key : await keys.revokeKey(key.id);
      if (!revoked) throw new ConnectError(`no key with id ${JSON.stringify(request.keyId)}`, Code.NotFound);
      deps.onKeysRevoked?.([key.hash]);
      if (!key.revokedAt) await deps.audit(access, "key.revoke", key.id, { name: key.name, prefix: key.prefix });
      return create(RevokeKeyResponseSchema, { key: apiKey(revoked, await callsThisMonth(accountId, key.id)) });
    },
    async renameKey(request, context) {
      const accountId = projectAccess(context).project.id;
      const name = trimmedName(request.name);
      const key = await ownKey(accountId, request.keyId);
      const renamed = await keys.renameKey(key.id, name);
      if (!renamed) throw new ConnectError(`no key with id ${JSON.stringify(request.keyId)}`, Code.NotFound);
      return create(RenameKeyResponseSchema, { key: apiKey(renamed, await callsThisMonth(accountId, key.id)) });
    },
    async listSessions(_request, context) {
      const user = userAccess(context);
      const at = now().getTime();
      const live = (await users.listSessions(user.userId)).filter((s) => s.expiresAt.getTime() > at);
      return create(ListSessionsResponseSchema, {
        sessions: live.map((s) =>
          create(SessionInfoSchema, {
            id: sessionIdOf(s.tokenHash),
            createdAt: timestampFromDate(s.createdAt),
            expiresAt: timestampFromDate(s.expiresAt),
            current: s.tokenHash === user.tokenHash,
            userAgent: s.userAgent,
          }),
        ),
      });
    },
    async logOutEverywhere(_request, context) {
      const user = userAccess(context);
      const ended = await users.deleteUserSessions(user.userId);
      setCookies(context, deps.sessions.clearCookies(deps.isSecure(context)));
      return create(LogOutEverywhereResponseSchema, { ended });
    },
    async changePassword(request, context) {
      const user = userAccess(context);
      await confirmPassword(context, user, request.currentPassword);
      const hash = await deps.gate.run("login", () => hashPassword(request.newPassword));
      await users.setPasswordHash(user.userId, hash);
      const ended = await users.deleteUserSessions(user.userId, user.tokenHash);
      return create(ChangePasswordResponseSchema, { otherSessionsEnded: ended });
    },
    async deleteAccount(request, context) {
      const user = userAccess(context);
      await confirmPassword(context, user, request.password);
      const organizations = await deps.teams.organizationsOf(user.userId);
      const alone: string[] = [];
      for (const { organization, role } of organizations) {
        const members = await deps.teams.listMembers(organization.id);
        if (members.length === 1) alone.push(organization.id);
        else if (role === "owner" && members.filter((m) => m.role === "owner").length === 1) {
          throw new ConnectError(
            `you are the last owner of ${organization.name}, which has other members: transfer the ownership first`,
            Code.FailedPrecondition,
          );
        }
      }
      for (const organizationId of alone) await deps.deletion.deleteOrganization(organizationId);
      await users.deleteUser(user.userId);
      deps.logger?.info({ userId: user.userId, organizations: alone.length }, "user deleted");
      setCookies(context, deps.sessions.clearCookies(deps.isSecure(context)));
      return create(DeleteAccountResponseSchema);
    },
  };
}

/** The refusal when a project holds as many active keys as its plan allows. */
export function keyLimitReached(plan: string, maxKeys: number): ConnectError {
  return new ConnectError(
    `the ${plan} plan allows ${maxKeys} active keys per project; revoke a key you no longer use, or move to a larger plan`,
    Code.FailedPrecondition,
  );
}

/** A key as shown to its owner: never the hash. */
function apiKey(key: ApiKeyRecord, callsThisMonth: bigint): ApiKey {
  return create(ApiKeySchema, {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    createdAt: timestampFromDate(key.createdAt),
    ...(key.lastUsedAt ? { lastUsedAt: timestampFromDate(key.lastUsedAt) } : {}),
    ...(key.revokedAt ? { revokedAt: timestampFromDate(key.revokedAt) } : {}),
    ...(key.expiresAt ? { expiresAt: timestampFromDate(key.expiresAt) } : {}),
    callsThisMonth,
    scope: key.scope === "read" ? KeyScope.READ : KeyScope.INGEST,
  });
}
