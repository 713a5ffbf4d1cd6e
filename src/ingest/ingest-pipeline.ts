import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { PriceCheck, type StoredTrace, type Trace, TraceSource } from "../../gen/calltrace/v1/trace_pb.js";
import { bearerToken } from "../auth/api-key.js";
import type { KeyVerifier } from "../auth/key-verifier.js";
import type { Plan, Plans } from "../config/plans.js";
import type { CountryLookup } from "../geo/country-lookup.js";
import type { AuthFailureLimiter } from "../limits/auth-failure-limiter.js";
import { quotaHeaders, type MonthlyQuota, type QuotaReservation } from "../limits/monthly-quota.js";
import type { RateLimiter } from "../limits/rate-limiter.js";
import { rateLimitHeaders, type HeaderFields } from "../limits/rate-limit-headers.js";
import type { ApiKeyRecord } from "../store/records.js";
import type { WriteOutcome } from "../store/trace-store.js";
import { type BatchingWriter, WriterQueueFullError } from "./batching-writer.js";
import { authRateLimited, invalidApiKey, quotaExceeded, rateLimited, storeUnavailable, validationFailed } from "./ingest-errors.js";
import { describeProblems, traceProblems, type FieldProblem } from "./trace-validation.js";

/** An authenticated request that passed its per-minute limit. */
export interface Admission {
  key: ApiKeyRecord;
  /** The key's plaintext as presented, to check the body's `api_key` against (D3); never stored. */
  presentedKey: string;
  plan: Plan;
  /** Rate-limit headers for every response to this request (D10); the edge sets them, refusals after admission do not repeat them. */
  headers: HeaderFields;
  /**
   * This month's quota, reserved alongside the per-minute window so that both go to Redis in one
   * round trip; given back unless the trace is stored. Its decision is only acted on after
   * validation (D1 order), in accept.
   */
  reservation: Promise<QuotaReservation>;
}

export interface TraceSubmission {
  trace: Trace;
  idempotencyKey: string | null;
  /** The client's address, for the country (D16); never stored. */
  clientAddress: string | undefined;
  /** Problems the protocol edge already found while decoding (wrong JSON types). */
  decodeProblems?: FieldProblem[];
}

export interface IngestPipelineDeps {
  verifier: KeyVerifier;
  limiter: RateLimiter;
  authFailures: AuthFailureLimiter;
  quota: MonthlyQuota;
  plans: Plans;
  writer: BatchingWriter;
  countryOf: CountryLookup;
}

/** Seconds a client should wait when the store cannot take a write (D13). */
const unavailableRetryAfter = 1;
const maxIdempotencyKeyLength = 128;

/**
 * The single implementation of TraceService.Ingest, split in two steps so that the REST edge can
 * read the body between them (D1: authentication and the per-minute limit come before the body).
 * Every step throws ConnectErrors built by ingest-errors.
 */
export interface IngestPipeline {
  /** D1 steps 1-3: the Authorization header (failures limited per client address), then the key's per-minute window. */
  admit(authorization: string | null, clientAddress: string | undefined): Promise<Admission>;
  /**
   * D1 steps 6-9: validation, key agreement, the monthly quota, then the durable write. Resolves
   * once stored, with the quota headers (D11) for the response.
   */
  accept(admission: Admission, submission: TraceSubmission): Promise<HeaderFields>;
  /** The edge could not make a submission of an admitted request (body too large, not JSON, client gone): gives back its reservation. */
  abandon(admission: Admission): Promise<void>;
}

export function createIngestPipeline(deps: IngestPipelineDeps): IngestPipeline {
  /**
   * D1 steps 6-9 for an admitted request: resolves once the trace is stored (or was, under its
   * Idempotency-Key), with the quota headers and whether this trace counts against the quota.
   */
  async function store(
    admission: Admission,
    { trace, idempotencyKey, clientAddress, decodeProblems = [] }: TraceSubmission,
  ): Promise<{ headers: HeaderFields; counted: boolean }> {
    let problems = traceProblems(trace);
    if (decodeProblems.length > 0) {
      // A field the edge could not decode is unset; its "is required" would only repeat the problem.
      const undecodable = new Set(decodeProblems.map((p) => p.field));
      problems = [...decodeProblems, ...problems.filter((p) => !undecodable.has(p.field))];
    }
    if (idempotencyKey !== null && (idempotencyKey.length === 0 || idempotencyKey.length > maxIdempotencyKeyLength)) {
      problems.push({ field: "Idempotency-Key", problem: `must be 1 to ${maxIdempotencyKeyLength} characters` });
    }
    if (problems.length > 0) throw validationFailed(describeProblems(problems));
    if (trace.apiKey !== admission.presentedKey) {
      throw validationFailed("api_key does not match the API key in the Authorization header");
    }

    // A literal rather than create(): the type still demands every field of the contract, and
    // the hot path skips the reflection. The numbers are present: validation requires them.
    const stored: StoredTrace = {
      $typeName: "calltrace.v1.StoredTrace",
      id: "",
      receivedAt: timestampFromMs(Date.now()),
      keyId: admission.key.id,
      accountId: admission.key.accountId,
      country: deps.countryOf(clientAddress),
      provider: trace.provider,
      model: trace.model,
      tokensIn: trace.tokensIn!,
      tokensOut: trace.tokensOut!,
      latencyMs: trace.latencyMs!,
      costUsd: trace.costUsd!,
      status: trace.status,
      ...(trace.error === undefined ? {} : { error: trace.error }),
      ...(trace.tokensCachedIn === undefined ? {} : { tokensCachedIn: trace.tokensCachedIn }),
      ...(trace.tokensCacheWrite === undefined ? {} : { tokensCacheWrite: trace.tokensCacheWrite }),
      ...(trace.tokensReasoning === undefined ? {} : { tokensReasoning: trace.tokensReasoning }),
      ...(trace.userId === undefined ? {} : { userId: trace.userId }),
      ...(trace.sessionId === undefined ? {} : { sessionId: trace.sessionId }),
      tags: trace.tags,
      metadata: trace.metadata,
      ...(trace.environment === undefined ? {} : { environment: trace.environment }),
      ...(trace.ttftMs === undefined ? {} : { ttftMs: trace.ttftMs }),
      priceCheck: PriceCheck.UNSPECIFIED,
      source: TraceSource.API,
      otlpTraceId: "",
      otlpSpanId: "",
      otlpParentSpanId: "",
      serviceName: "",
    };
    const { decision } = await admission.reservation;
    const headers = quotaHeaders(decision);
    if (!decision.allowed) throw quotaExceeded(decision.retryAfter, headers);
    let outcome: WriteOutcome;
    try {
      outcome = await deps.writer.write({ trace: stored, idempotencyKey: idempotencyKey ?? undefined });
    } catch (error) {
      if (error instanceof WriterQueueFullError) throw storeUnavailable(unavailableRetryAfter);
      throw error;
    }
    if (outcome.kind === "failed") throw storeUnavailable(unavailableRetryAfter);
    // A repeated Idempotency-Key is answered as stored, but it was counted the first time.
    return { headers, counted: outcome.kind === "stored" };
  }

  return {
    async admit(authorization, clientAddress) {
      const presentedKey = bearerToken(authorization);
      let key: ApiKeyRecord | undefined;
      try {
        key = presentedKey === undefined ? undefined : await deps.verifier.verify(presentedKey);
      } catch {
        // The key store cannot be reached (MongoDB down): the key is unchecked, not invalid (D13).
        throw storeUnavailable(unavailableRetryAfter);
      }
      const plan = key && deps.plans.get(key.plan);
      if (!key || !plan || presentedKey === undefined) {
        const wait = await deps.authFailures.failed(clientAddress);
        throw wait === undefined ? invalidApiKey() : authRateLimited(wait);
      }
      const reservation = deps.quota.reserve(key, plan);
      // Acted on (or given back) later; until then, a failure must not count as unhandled.
      reservation.catch(() => {});
      let admitted = false;
      try {
        const decision = await deps.limiter.consume(key.id, plan);
        const headers = rateLimitHeaders(decision);
        if (!decision.allowed) throw rateLimited(decision.retryAfter, headers);
        admitted = true;
        return { key, presentedKey, plan, headers, reservation };
      } finally {
        if (!admitted) await giveBack(reservation);
      }
    },

    abandon(admission) {
      return giveBack(admission.reservation);
    },

    async accept(admission, submission) {
      // Whatever the answer, a trace that does not count gives its reservation back before it.
      let counted = false;
      try {
        const result = await store(admission, submission);
        counted = result.counted;
        return result.headers;
      } finally {
        if (!counted) await giveBack(admission.reservation);
      }
    },
  };
}

/**
 * Releases a reservation before the refusal is answered, so that a client's next request (to any
 * instance) already sees the count restored. A reservation that failed holds nothing; a release
 * that fails is the limiter's to insure, not this request's to fail over.
 */
async function giveBack(reservation: Promise<QuotaReservation>): Promise<void> {
  try {
    await (await reservation).release();
  } catch {
    // nothing to give back, or nothing more to do
  }
}
