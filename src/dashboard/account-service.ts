import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  type AccountService,
  ApiKeySchema,
  CreateKeyResponseSchema,
  GetAccountResponseSchema,
  ListKeysResponseSchema,
  RevokeKeyResponseSchema,
  type ApiKey,
} from "../../gen/calltrace/v1/account_service_pb.js";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { mintApiKey } from "../auth/api-key.js";
import type { Plans } from "../config/plans.js";
import type { KeyStore } from "../store/key-store.js";
import type { ApiKeyRecord } from "../store/records.js";
import type { TraceReader } from "../store/trace-reader.js";
import { calendarMonth } from "./calendar-month.js";
import { signedIn } from "./signed-in.js";

export interface AccountServiceDeps {
  keys: KeyStore;
  reader: TraceReader;
  plans: Plans;
  now?: () => Date;
}

/** AccountService: the caller's plan, usage and keys. Keys are looked up within the caller's account only. */
export function accountService({ keys, reader, plans, now = () => new Date() }: AccountServiceDeps): ServiceImpl<typeof AccountService> {
  /** Traces this calendar month (UTC), the window of the monthly quota (D11). */
  const callsThisMonth = async (accountId: string, keyId = "") => {
    const { start, end } = calendarMonth(now());
    const filter = create(TraceFilterSchema, { since: timestampFromDate(start), until: timestampFromDate(end), keyId });
    return (await reader.usageTotals(accountId, filter)).calls;
  };
  const ownKey = async (accountId: string, keyId: string) => {
    const key = (await keys.listKeys(accountId)).find((k) => k.id === keyId);
    if (!key) throw new ConnectError("no such key in this account", Code.NotFound);
    return key;
  };

  return {
    async getAccount(_request, context) {
      const { accountId } = signedIn(context);
      const account = await keys.getAccount(accountId);
      if (!account) throw new ConnectError("the account no longer exists", Code.NotFound);
      const plan = plans.get(account.plan);
      return create(GetAccountResponseSchema, {
        accountId,
        name: account.name,
        plan: account.plan,
        planPerMinute: BigInt(plan?.perMinute ?? 0),
        planPerMonth: BigInt(plan?.perMonth ?? 0),
        callsThisMonth: await callsThisMonth(accountId),
        monthResetsAt: timestampFromDate(calendarMonth(now()).end),
      });
    },
    async listKeys(_request, context) {
      const { accountId } = signedIn(context);
      const records = await keys.listKeys(accountId);
      const counts = await Promise.all(records.map((k) => callsThisMonth(accountId, k.id)));
      return create(ListKeysResponseSchema, { keys: records.map((k, i) => apiKey(k, counts[i]!)) });
    },
    async createKey(request, context) {
      const { accountId } = signedIn(context);
      const minted = mintApiKey();
      const key = await keys.createKey({ accountId, name: request.name.trim(), hash: minted.hash, prefix: minted.prefix });
      return create(CreateKeyResponseSchema, { key: apiKey(key, 0n), plaintext: minted.plaintext });
    },
    async revokeKey(request, context) {
      const { accountId } = signedIn(context);
      const key = await ownKey(accountId, request.keyId);
      const revoked = key.revokedAt ? key : await keys.revokeKey(key.id);
      if (!revoked) throw new ConnectError("no such key in this account", Code.NotFound);
      return create(RevokeKeyResponseSchema, { key: apiKey(revoked, await callsThisMonth(accountId, key.id)) });
    },
  };
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
    callsThisMonth,
  });
}
