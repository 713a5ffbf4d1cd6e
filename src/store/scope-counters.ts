/**
 * Counters of the calls in the scopes alert rules watch (docs/alerts.md, "Evaluation"), kept by
 * the store's writer in step with the traces it commits, so that evaluation and GET /v1/budget
 * read a few cells instead of the traces. A scope is counted only once watched; watching it
 * back-fills its history once, so a new rule sees the spend before it.
 */

/** Quarter-hour cells, kept for calendar months and rolling windows (every time zone's offset is a multiple of 15 minutes). */
export const quarterMs = 900_000;
/** Minute cells, with calls per latency bucket, for the error and latency rules' trailing minutes. */
export const minuteMs = 60_000;
/** How long each resolution's cells are kept: a month in any zone plus a day; the longest trailing window (1440 minutes) plus an hour. */
export const keepQuarterMs = 33 * 86_400_000;
export const keepMinuteMs = 25 * 3_600_000;

export type CellResolution = typeof quarterMs | typeof minuteMs;

/** The sums of one scope's calls in one cell (quarter hour or minute, by `start`, UTC ms). */
export interface ScopeCell {
  start: number;
  calls: number;
  errors: number;
  costUsd: number;
  /** Calls the server could not price (PriceCheck.UNPRICED). */
  unpriced: number;
}

/** Calls of one scope in one minute and latency bucket (latency-bucket.ts). */
export interface ScopeLatencyCell {
  start: number;
  bucket: number;
  calls: number;
}

/** The store's side: implemented by every adapter, tested by test/store/scope-counters-contract.test.ts. */
export interface ScopeCounters {
  /**
   * Starts counting these scopes of a project (scope-keys.ts), unless they are counted already,
   * and back-fills each new one from the traces stored before (once). Idempotent, safe from
   * several instances at once.
   */
  watch(accountId: string, scopes: string[]): Promise<void>;
  /** A scope's cells of one resolution starting within [fromMs, toMs), summed over the store's writers; in no order. */
  cells(accountId: string, scope: string, resolution: CellResolution, fromMs: number, toMs: number): Promise<ScopeCell[]>;
  /** A scope's minute latency cells starting within [fromMs, toMs), summed over writers; in no order. */
  latency(accountId: string, scope: string, fromMs: number, toMs: number): Promise<ScopeLatencyCell[]>;
  /** Deletes cells past their resolution's keep, and the watches (and cells) of scopes not in `keep` for each project. */
  prune(nowMs: number, keep: Map<string, Set<string>>): Promise<void>;
}

/** What the counters need of a trace: the one shape both adapters turn their rows into. */
export interface CountedCall {
  keyId: string;
  model: string;
  status: string;
  costUsd: number;
  latencyMs: number;
  unpriced: boolean;
  userId: string | undefined;
  environment: string | undefined;
  tags: readonly string[];
  metadata: readonly (readonly [string, string])[];
}
