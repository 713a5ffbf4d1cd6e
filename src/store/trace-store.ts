import type { StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";

/** A trace on its way into the store, with the retry token it came with (D14). */
export interface TraceWrite {
  trace: StoredTrace;
  idempotencyKey: string | undefined;
  /** The X-Quota-Remaining answered for this trace, kept with its Idempotency-Key for replays to answer again (D23). */
  quotaRemaining?: number | undefined;
  /** An OTLP call's span start, in whole seconds since the epoch: the embedded store keys the call by it too (D44). */
  otlpStartS?: number | undefined;
  /** `traces import` only: the trace's identity in its file; a trace already imported under it is a duplicate, however long ago. */
  importKey?: string | undefined;
}

/** Where one stored OTLP call sits in its OTLP trace (lower-case hex; the parent empty for a root span). */
export interface OtlpSpanIds {
  otlpTraceId: string;
  otlpSpanId: string;
  otlpParentSpanId: string;
}

/** What became of one write of a batch. */
export type WriteOutcome =
  | { kind: "stored" }
  /** An earlier write with the same key id and Idempotency-Key within 24 hours: nothing new stored. */
  | {
      kind: "duplicate";
      /** The first write's `quotaRemaining`; undefined when it had none (or its claim predates remembering it). */
      quotaRemaining: number | undefined;
    }
  | {
      kind: "failed";
      error: Error;
      /** Set when it failed while its batch was being committed: what became of the write in the end, as it may yet be stored. */
      committed?: Promise<WriteOutcome>;
    };

export interface TraceQuery {
  since?: Date;
  until?: Date;
  accountId?: string;
}

export interface BatchHandover {
  /** Batches handed over before the first is answered. */
  maxInFlight: number;
  /**
   * Most writes per batch. A store that merges the batches queued behind a commit into the next
   * one takes small batches, so that it commits while the event loop is still reading requests.
   */
  batchSize: number;
}

/** How many calls one provider's model answered. */
export interface ModelCalls {
  provider: string;
  model: string;
  calls: number;
}

/** Where traces live. Implemented by every store adapter. */
export interface TraceStore {
  /**
   * Durably stores a batch (group commit, D13) and answers one outcome per write, in order.
   * Rejects only when nothing of the batch could be stored.
   */
  writeBatch(writes: TraceWrite[]): Promise<WriteOutcome[]>;
  /** How this store wants writes handed over; without it, one batch at a time of up to WRITER_MAX_BATCH. */
  readonly handover?: BatchHandover;
  /**
   * The OTLP span ids (span and parent) of an account's traces that came from these OTLP trace
   * ids, in no order: how OTLP ingest stores a call that arrives as nested spans only once.
   */
  otlpSpans(accountId: string, otlpTraceIds: string[]): Promise<OtlpSpanIds[]>;
  /** Traces in receive order, oldest first; never those past the retention period. */
  exportTraces(query: TraceQuery): AsyncIterable<StoredTrace>;
  /** Calls per provider and model received since `since`, over every account, in no order (`calltrace prices check`). */
  modelCalls(since: Date): Promise<ModelCalls[]>;
  /**
   * Deletes what is past the retention period now. Stores also do this on their own (the
   * embedded store hourly, MongoDB through TTL indexes where the server has them); a trace past
   * the period is never read back, whether or not it is deleted yet.
   */
  deleteExpired(): Promise<void>;
}
