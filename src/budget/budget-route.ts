import { toJson } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { type BudgetStatus, BudgetStatusSchema } from "../../gen/calltrace/v1/alert_pb.js";
import { bearerToken } from "../auth/api-key.js";
import type { KeyVerifier } from "../auth/key-verifier.js";
import { authRateLimited, invalidApiKey, rateLimited, storeUnavailable } from "../ingest/ingest-errors.js";
import type { AuthFailureLimiter } from "../limits/auth-failure-limiter.js";
import type { HeaderFields } from "../limits/rate-limit-headers.js";
import { clientAddress } from "../server/client-address.js";
import { sendJson } from "../server/json-response.js";
import type { NodeRequest, NodeResponse } from "../server/node-types.js";
import { restRefusal } from "../server/rest-refusal.js";
import type { ApiKeyRecord } from "../store/records.js";
import type { BudgetKey } from "./budget-status.js";

export interface BudgetRouteDeps {
  verifier: KeyVerifier;
  /** Failed authentications count per client address, as on ingest (D12). */
  authFailures: AuthFailureLimiter;
  /** The key's read window (READ_PER_MINUTE, teams/read-limit.ts): the rate-limit headers, or RESOURCE_EXHAUSTED carrying them. */
  limitRead: (key: ApiKeyRecord) => Promise<Record<string, string>>;
  status: (key: BudgetKey) => Promise<BudgetStatus>;
  trustProxy: boolean;
  /** WRITE_TIMEOUT_MS: the most the key lookup waits on the store. */
  timeoutMs: number;
}

/**
 * `GET /v1/budget`: the budgets that count an ingest key's calls (budget-status.ts), as the
 * BudgetStatus message's JSON. The key is checked as on `POST /v1/traces` (a read key, unknown or
 * revoked, is the same 401, D2) and counted against its read window, not its ingest window.
 */
export function budgetRoute(deps: BudgetRouteDeps) {
  const refuse = (res: NodeResponse, error: unknown, common: HeaderFields) => {
    const { status, body, headers } = restRefusal(error);
    sendJson(res, status, body, { ...common, ...Object.fromEntries(headers) });
  };
  return async (req: NodeRequest, res: NodeResponse, common: HeaderFields): Promise<void> => {
    const presented = bearerToken(req.headers.authorization);
    let key: ApiKeyRecord | undefined;
    try {
      key = presented === undefined ? undefined : await deps.verifier.verify(presented, deps.timeoutMs);
    } catch {
      return refuse(res, storeUnavailable(1), common);
    }
    if (key?.scope !== "ingest") {
      const wait = await deps.authFailures.failed(clientAddress(req.headers, req.socket.remoteAddress, deps.trustProxy));
      return refuse(res, wait === undefined ? invalidApiKey() : authRateLimited(wait), common);
    }
    let limitHeaders: Record<string, string>;
    try {
      limitHeaders = await deps.limitRead(key);
    } catch (error) {
      if (!(error instanceof ConnectError)) throw error;
      const retryAfter = Number(error.metadata.get("retry-after")) || 1;
      return refuse(res, rateLimited(retryAfter, error.metadata), common);
    }
    const status = await deps.status(key);
    sendJson(res, 200, toJson(BudgetStatusSchema, status), { ...common, ...limitHeaders, "cache-control": "no-store" });
  };
}
