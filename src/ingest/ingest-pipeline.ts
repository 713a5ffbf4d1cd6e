import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { StoredTrace, Trace } from "../../gen/calltrace/v1/trace_pb.js";
import { bearerToken } from "../auth/api-key.js";
import type { KeyVerifier } from "../auth/key-verifier.js";
import type { Plan, Plans } from "../config/plans.js";
import type { CountryLookup } from "../geo/country-lookup.js";
import type { AuthFailureLimiter } from "../limits/auth-failure-limiter.js";
import { type MonthlyQuota, type QuotaReservation, QuotaUnavailableError, quotaHeaders } from "../limits/monthly-quota.js";
import type { RateLimiter } from "../limits/rate-limiter.js";
import type { PriceBook } from "../pricing/price-match.js";
import type { ProjectPrices } from "../pricing/project-prices.js";
import { rateLimitHeaders, type HeaderFields } from "../limits/rate-limit-headers.js";
import type { ApiKeyRecord } from "../store/records.js";
import { withTimeLimit } from "../store/time-limit.js";
import type { TraceWrite, WriteOutcome } from "../store/trace-store.js";
import { type BatchingWriter, WriterQueueFullError } from "./batching-writer.js";
import {
  authRateLimited,
  invalidApiKey,
  keyMismatch,
  quotaExceeded,
  rateLimited,
  refusalText,
  storeUnavailable,
  validationFailed,
} from "./ingest-errors.js";
import { callTimeProblem, keptDays, timestampMsChecked } from "./call-time.js";
import { apiOrigin, storedTraceOf, type TraceOrigin } from "./stored-trace.js";
import { describeProblems, submissionProblems, traceProblems, type FieldProblem } from "./trace-validation.js";

/** An authenticated request that passed its per-minute limit. */
export interface Admission {
  key: ApiKeyRecord;
  /** The key's plaintext as presented, to check the body's `api_key` against (D3); never stored. */
  presentedKey: string;
  plan: Plan;
  /** Rate-limit headers for every response to this request (D10); the edge sets them, refusals after admission do not repeat them. */
  headers: HeaderFields;
  /**
   * This month's quota for one trace, reserved alongside the per-minute window so that both go to
   * Redis in one round trip; given back unless the trace is stored. Its decision is only acted on
   * after validation (D1 order), in accept. None when the request was admitted for many traces
   * (OTLP), whose count is known only once the body is read.
   */
  reservation: Promise<QuotaReservation> | undefined;
  /**
   * How long this request has waited on the store so far (milliseconds). Its steps (verifying the
   * key, rebuilding the month's count, the write) share one WRITE_TIMEOUT_MS, so that a stalling
   * store answers 503 within it rather than after the sum of the steps' timeouts.
   */
  storeWaitMs: number;
}

export interface TraceSubmission {
  trace: Trace;
  idempotencyKey: string | null;
  /** The client's address, for the country (D16); never stored. */
  clientAddress: string | undefined;
  /** Problems the protocol edge already found while decoding (wrong JSON types). */
  decodeProblems?: FieldProblem[];
}

/** One of many traces of a request (an OTLP span), its `api_key` left empty: the request's key is the only one. */
export interface CallSubmission {
  trace: Trace;
  origin: TraceOrigin;
  /** Stores the trace at most once within 24 hours (D14), across retried requests. */
  idempotencyKey: string;
  /** The OTLP span's start, in whole seconds since the epoch (D44). */
  otlpStartS: number;
}

export interface CallsOutcome {
  /** Quota headers (D11) for the response. */
  headers: HeaderFields;
  /** Traces newly stored. */
  stored: number;
  /** Traces stored before under the same idempotency key. */
  duplicates: number;
  /** The calls left out, by their index in the submission, and why. */
  rejected: { index: number; reason: string }[];
}

export interface IngestPipelineDeps {
  verifier: KeyVerifier;
  limiter: RateLimiter;
  authFailures: AuthFailureLimiter;
  quota: MonthlyQuota;
  plans: Plans;
  writer: BatchingWriter;
  countryOf: CountryLookup;
  /** WRITE_TIMEOUT_MS: the most a request waits on the store, all its steps together. */
  timeoutMs: number;
  /** Projects' custom prices, which the server's price of a call applies before the catalog's. */
  prices: ProjectPrices;
  /** RETENTION_DAYS: with the project's own retention, how old a call time may be (D58). */
  retentionDays: number;
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
  /**
   * D1 steps 1-3: the Authorization header (failures limited per client address), then the key's
   * per-minute window. `reserveQuota: false` for a request of many traces (an OTLP Export), whose
   * quota acceptCalls reserves.
   */
  admit(authorization: string | null, clientAddress: string | undefined, reserveQuota?: boolean): Promise<Admission>;
  /**
   * D1 steps 6-9: validation, key agreement, the monthly quota, then the durable write. Resolves
   * once stored, with the quota headers (D11) for the response.
   */
  accept(admission: Admission, submission: TraceSubmission): Promise<HeaderFields>;
  /**
   * Many traces of one admitted request (an OTLP Export), each under its own idempotency key: each
   * is validated, the valid ones are counted against the monthly quota together, and those that fit
   * are written. Resolves once every stored trace is durably committed. Refuses the whole request
   * (throws) only when none fits the quota (429) or a write failed (503, safe to retry: stored
   * traces come back as duplicates); every other trace left out is in `rejected`.
   */
  acceptCalls(admission: Admission, calls: CallSubmission[], clientAddress: string | undefined): Promise<CallsOutcome>;
  /**
   * The admitted request's project's custom prices: at once when cached; a first read is a wait on
   * the store like the others, within what is left of the request's time. A store that cannot read
   * them in time cannot take the trace either (503).
   */
  priceBook(admission: Admission): Promise<PriceBook>;
  /** The edge could not make a submission of an admitted request (body too large, not JSON, client gone): gives back its reservation. */
  abandon(admission: Admission): Promise<void>;
}

export function createIngestPipeline(deps: IngestPipelineDeps): IngestPipeline {
  /** What is left of the request's time to wait on the store. */
  const timeLeft = (admission: Admission) => Math.max(1, deps.timeoutMs - admission.storeWaitMs);

  /**
   * D1 steps 6-9 for an admitted request: resolves once the trace is stored (or was, under its
   * Idempotency-Key), with the quota headers and whether this trace counts against the quota.
   */
  async function store(
    admission: Admission,
    { trace, idempotencyKey, clientAddress, decodeProblems = [] }: TraceSubmission,
  ): Promise<{ headers: HeaderFields; counted: boolean }> {
    const problems = submissionProblems(trace, decodeProblems);
    const lateOrEarly = callTimeOutOfBounds(admission, trace);
    if (lateOrEarly) problems.push(lateOrEarly);
    if (idempotencyKey !== null && (idempotencyKey.length === 0 || idempotencyKey.length > maxIdempotencyKeyLength)) {
      problems.push({ field: "Idempotency-Key", problem: `must be 1 to ${maxIdempotencyKeyLength} characters` });
    }
    if (problems.length > 0) throw validationFailed(problems);
    if (trace.apiKey !== admission.presentedKey) {
      throw keyMismatch();
    }

    const stored = storedTrace(
      admission,
      trace,
      clientAddress,
      apiOrigin(trace, await priceBook(admission), trace.calledAt ? timestampDate(trace.calledAt) : new Date()),
    );
    if (!admission.reservation) throw new Error("a single trace needs an admission that reserved its quota");
    const reservation = await reserved(admission, admission.reservation);
    const decision = reservation.decision;
    const headers = quotaHeaders(decision);
    if (!decision.allowed) throw quotaExceeded(decision.retryAfter, headers);
    const outcome = await write(
      admission,
      {
        trace: stored,
        idempotencyKey: idempotencyKey ?? undefined,
        quotaRemaining: decision.remaining,
      },
      reservation,
    );
    if (outcome.kind === "duplicate") {
      // A repeated Idempotency-Key (D14) stored nothing and gives its reservation back: the answer
      // is the first answer's figure, kept with the key (D23). A claim made before figures were
      // kept has none: then the month as it stands without this replay.
      const remaining = outcome.quotaRemaining ?? Math.min(decision.limit, decision.remaining + 1);
      return { headers: quotaHeaders({ ...decision, remaining }), counted: false };
    }
    reservation.stored();
    return { headers, counted: true };
  }

  async function priceBook(admission: Admission): Promise<PriceBook> {
    const book = deps.prices.book(admission.key.accountId);
    if (!(book instanceof Promise)) return book;
    const started = performance.now();
    try {
      return await withTimeLimit(book, timeLeft(admission), () => new Error("the project's prices were not read in time"));
    } catch {
      throw storeUnavailable(unavailableRetryAfter);
    } finally {
      admission.storeWaitMs += performance.now() - started;
    }
  }

  /** What is wrong with a trace's call time, if it has one (D58). */
  function callTimeOutOfBounds(admission: Admission, trace: Trace): FieldProblem | undefined {
    if (trace.calledAt === undefined) return undefined;
    return callTimeProblem(timestampMsChecked(trace.calledAt), Date.now(), keptDays(deps.retentionDays, admission.key.retentionDays));
  }

  /** The server's record of a trace of an admitted request, received now. */
  function storedTrace(admission: Admission, trace: Trace, clientAddress: string | undefined, origin: TraceOrigin): StoredTrace {
    const receipt = {
      keyId: admission.key.id,
      accountId: admission.key.accountId,
      country: deps.countryOf(clientAddress),
      receivedAtMs: Date.now(),
    };
    return storedTraceOf(trace, receipt, origin);
  }

  /**
   * Hands one trace to the batching writer; a full queue or a failed commit is a 503 (D13). A
   * write answered while its commit was under way keeps its trace reserved until that commit
   * tells whether it was stored: given back at once, a 503 stored after all would not count.
   */
  async function write(admission: Admission, traceWrite: TraceWrite, reservation: QuotaReservation): Promise<WriteOutcome> {
    let outcome: WriteOutcome;
    try {
      outcome = await deps.writer.write(traceWrite, timeLeft(admission));
    } catch (error) {
      if (error instanceof WriterQueueFullError) throw storeUnavailable(unavailableRetryAfter);
      throw error;
    }
    if (outcome.kind === "failed") {
      if (outcome.committed) reservation.whenCommitted(outcome.committed.then((later) => later.kind === "stored"));
      throw storeUnavailable(unavailableRetryAfter);
    }
    return outcome;
  }

  return {
    priceBook,
    async admit(authorization, clientAddress, reserveQuota = true) {
      const presentedKey = bearerToken(authorization);
      let key: ApiKeyRecord | undefined;
      const started = performance.now();
      try {
        const verified = presentedKey === undefined ? undefined : deps.verifier.verify(presentedKey, deps.timeoutMs);
        key = verified instanceof Promise ? await verified : verified;
      } catch {
        // The key store cannot be reached (MongoDB down): the key is unchecked, not invalid (D13).
        throw storeUnavailable(unavailableRetryAfter);
      }
      const plan = key && deps.plans.get(key.plan);
      // A read key sends no traces, and learns no more here than an unknown key would (docs/teams.md).
      if (!key || !plan || presentedKey === undefined || key.scope !== "ingest") {
        const wait = await deps.authFailures.failed(clientAddress);
        throw wait === undefined ? invalidApiKey() : authRateLimited(wait);
      }
      const storeWaitMs = performance.now() - started;
      const reservation = reserveQuota ? deps.quota.reserve(key, plan, 1, Math.max(1, deps.timeoutMs - storeWaitMs)) : undefined;
      // Acted on (or given back) later; until then, a failure must not count as unhandled.
      reservation?.catch(() => {});
      let admitted = false;
      try {
        const decision = await deps.limiter.consume(key.id, plan);
        const headers = rateLimitHeaders(decision);
        if (!decision.allowed) throw rateLimited(decision.retryAfter, headers);
        admitted = true;
        return { key, presentedKey, plan, headers, reservation, storeWaitMs };
      } finally {
        if (!admitted) await giveBack(reservation);
      }
    },

    abandon(admission) {
      return giveBack(admission.reservation);
    },

    async acceptCalls(admission, calls, clientAddress) {
      // A request that turned out to carry many traces (OTLP JSON) counts them all below instead.
      await giveBack(admission.reservation);
      const rejected: CallsOutcome["rejected"] = [];
      const valid: { index: number; stored: StoredTrace; idempotencyKey: string; otlpStartS: number }[] = [];
      for (let index = 0; index < calls.length; index++) {
        const { trace, origin, idempotencyKey, otlpStartS } = calls[index]!;
        trace.apiKey = admission.presentedKey;
        // A span's start out of bounds (a skewed clock, a replayed file) places the call at its receipt instead.
        if (callTimeOutOfBounds(admission, trace)) delete trace.calledAt;
        const problems = traceProblems(trace);
        if (problems.length > 0) rejected.push({ index, reason: describeProblems(problems) });
        else valid.push({ index, stored: storedTrace(admission, trace, clientAddress, origin), idempotencyKey, otlpStartS });
      }
      if (valid.length === 0) return { headers: {}, stored: 0, duplicates: 0, rejected };

      const reserving = deps.quota.reserve(admission.key, admission.plan, valid.length, timeLeft(admission));
      const reservation = await reserved(admission, reserving);
      const decision = reservation.decision;
      if (!decision.allowed) throw quotaExceeded(decision.retryAfter, quotaHeaders(decision));
      for (const over of valid.splice(decision.granted)) rejected.push({ index: over.index, reason: refusalText.quotaExceeded });
      let stored = 0;
      try {
        const outcomes = await Promise.allSettled(
          valid.map((call) =>
            write(admission, { trace: call.stored, idempotencyKey: call.idempotencyKey, otlpStartS: call.otlpStartS }, reservation),
          ),
        );
        const failure = outcomes.find((o) => o.status === "rejected");
        stored = outcomes.filter((o) => o.status === "fulfilled" && o.value.kind === "stored").length;
        if (failure) throw failure.reason;
        rejected.sort((a, b) => a.index - b.index);
        // What is left counts the duplicates given back below.
        const headers = quotaHeaders({ ...decision, remaining: Math.min(decision.limit, decision.remaining + valid.length - stored) });
        return { headers, stored, duplicates: valid.length - stored, rejected };
      } finally {
        // Only stored traces count: duplicates and failed writes give theirs back.
        reservation.stored(stored);
        await giveBack(reserving, valid.length - stored);
      }
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
 * A reservation, the wait for it counted as the request's wait on the store; a month's
 * counter that could not be rebuilt in time is answered as a store that cannot take the write (503).
 */
async function reserved(admission: Admission, reservation: Promise<QuotaReservation>): Promise<QuotaReservation> {
  const started = performance.now();
  try {
    return await reservation;
  } catch (error) {
    if (error instanceof QuotaUnavailableError) throw storeUnavailable(unavailableRetryAfter);
    throw error;
  } finally {
    admission.storeWaitMs += performance.now() - started;
  }
}

/**
 * Releases a reservation before the refusal is answered, so that a client's next request (to any
 * instance) already sees the count restored. A reservation that failed holds nothing; a release
 * that fails is the limiter's to insure, not this request's to fail over.
 */
async function giveBack(reservation: Promise<QuotaReservation> | undefined, count?: number): Promise<void> {
  if (!reservation) return;
  try {
    await (await reservation).release(count);
  } catch {
    // nothing to give back, or nothing more to do
  }
}
