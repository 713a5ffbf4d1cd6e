import type { StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";

/** A trace on its way into the store, with the retry token it came with (D14). */
export interface TraceWrite {
  trace: StoredTrace;
  idempotencyKey: string | undefined;
}

/** What became of one write of a batch. */
export type WriteOutcome =
  | { kind: "stored" }
  /** An earlier write with the same key id and Idempotency-Key within 24 hours: nothing new stored. */
  | { kind: "duplicate" }
  | { kind: "failed"; error: Error };

export interface TraceQuery {
  since?: Date;
  until?: Date;
  accountId?: string;
}

/** Where traces live. Implemented by every store adapter. */
export interface TraceStore {
  /**
   * Durably stores a batch (group commit, D13) and answers one outcome per write, in order.
   * Rejects only when nothing of the batch could be stored.
   */
  writeBatch(writes: TraceWrite[]): Promise<WriteOutcome[]>;
  /** How many batches the writer may hand over before the first is answered (default 1). */
  readonly maxBatchesInFlight?: number;
  /** Traces in receive order, oldest first; never those past the retention period. */
  exportTraces(query: TraceQuery): AsyncIterable<StoredTrace>;
  /**
   * Deletes what is past the retention period now. Stores also do this on their own (the
   * embedded store hourly, MongoDB through TTL indexes where the server has them); a trace past
   * the period is never read back, whether or not it is deleted yet.
   */
  deleteExpired(): Promise<void>;
}
