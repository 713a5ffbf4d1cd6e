import type Database from "better-sqlite3";
import { numberedIndexes, storedTraceColumns, storedTraceValuesSql, traceColumns, type TraceValues } from "./sqlite-trace-row.js";
import { idNumbering } from "./sqlite-id-numbers.js";
import { metadataSet, noSet, setNumbering, tagSet } from "./sqlite-attribute-sets.js";
import type { ValueCap } from "../value-cap.js";
import { sqliteErrorRollup } from "./sqlite-error-rollup.js";
import { sqliteRunRollup } from "./sqlite-run-rollup.js";
import { sqliteScopeCounting } from "./sqlite-scope-counters.js";
import { admittedValues, sqliteUsageRollup } from "./sqlite-usage-rollup.js";

/** The bound of tag and metadata sets per project (setsPerProject unless a test wants a small one). */
export interface AttributeSetOptions {
  setsPerProject?: number;
}

/** How long an Idempotency-Key is remembered (D14). */
export const idempotencyWindowMs = 24 * 60 * 60 * 1000;

/**
 * A batch as the writer thread commits it: rows, the Idempotency-Key each claims (or null: none,
 * or an OTLP call, whose key is in its row) and the X-Quota-Remaining to remember with that key
 * (or null). Flat arrays: cheap to post to the thread.
 */
export interface RowBatch {
  traces: TraceValues[];
  idempotencyKeys: (string | null)[];
  quotaRemaining: (number | null)[];
  /** Leave the runs roll-up of the rows to after a large import (D81): note their sequence numbers instead. */
  deferRuns?: boolean;
}

/** The traces not stored because their Idempotency-Key was seen before, and the figure each key's first write remembered (null: none). */
export interface Duplicates {
  indexes: number[];
  quotaRemaining: (number | null)[];
}

/**
 * Traces a commit takes at most of the batches queued behind the last one (sqlite-write-worker.ts).
 * An import hands over more than this in flight (src/import/trace-import.ts), so its commits are
 * this large: a commit writes each page it dirtied once however many rows changed it, and a
 * trace's user, session, cost, latency, tokens and run put it on a page of its own in each of
 * those indexes, so past half a million traces 50,000 a commit write a quarter of the bytes
 * 10,000 did (bench/RESULTS.md, D66). Such a commit holds the write lock 2-3 s on a quiet machine,
 * within the 5 s a server sharing the file waits for it. Live batches are far smaller (D13).
 */
export const commitTracesMax = 50_000;

/** The parts of a batch's commit, in order, as `sqliteBatchCommit` reports them to a benchmark (bench/import.ts). */
export const commitParts = ["rows", "rollups", "errorGroups", "runs", "scopeCells"] as const;
export type CommitPart = (typeof commitParts)[number];

/**
 * Commits a batch of traces in one transaction, so a batch costs one fsync however many traces
 * it holds: idempotency claims, the rows, the keys' last use, the daily roll-ups and the
 * alert scopes' counters together.
 * Answers the traces not stored because their Idempotency-Key was seen before, or their OTLP call
 * is stored already (D37: its key in the same start second, or the second before or after, D44);
 * every other trace is stored. `partDone`, when given, is called as each part of the work ends (rows:
 * the idempotency claims, the rows and their indexes), so a benchmark can time them.
 */
export function sqliteBatchCommit(
  db: Database.Database,
  cap: ValueCap,
  partDone?: (part: CommitPart) => void,
  options: AttributeSetOptions = {},
): (batch: RowBatch, now: number) => Duplicates {
  const addToRollups = sqliteUsageRollup(db, admittedValues(db, cap));
  const errorGroups = sqliteErrorRollup(db, cap);
  const addToRuns = sqliteRunRollup(db);
  const addToScopeCells = sqliteScopeCounting(db);
  const statements = {
    // The unique indexes a new row can collide with: the OTLP call's (D37, D44) and the import's.
    insertTrace: db.prepare(
      `INSERT INTO traces (${storedTraceColumns.join(", ")}, tags_num, metadata_num) VALUES (${storedTraceValuesSql}, ?, ?) ON CONFLICT DO NOTHING`,
    ),
    claimIdempotencyKey: db.prepare(
      `INSERT INTO idempotency (key_id, idempotency_key, created_at, quota_remaining) VALUES (?, ?, ?, ?)
       ON CONFLICT (key_id, idempotency_key) DO UPDATE SET created_at = excluded.created_at, quota_remaining = excluded.quota_remaining
       WHERE created_at < ?`,
    ),
    noteRunsPending: db.prepare(`INSERT INTO runs_pending (from_seq, to_seq) VALUES (?, ?)`),
    rememberedQuota: db.prepare(`SELECT quota_remaining FROM idempotency WHERE key_id = ? AND idempotency_key = ?`).pluck(),
    forgetIdempotencyKeys: db.prepare(`DELETE FROM idempotency WHERE created_at < ?`),
    touchKey: db.prepare(`UPDATE api_keys SET last_used_at = ? WHERE id = ?`),
    legacyOtlpClaim: db.prepare(`SELECT 1 FROM idempotency WHERE key_id = ? AND idempotency_key = ? AND created_at >= ?`).pluck(),
    // The same call reported by another span that started in the second before or after (D44).
    otlpCallBeside: db
      .prepare(
        `SELECT 1 FROM traces WHERE project_num = ? AND otlp_start_s IN (? - 1, ? + 1) AND otlp_call_key = ? AND otlp_call_key IS NOT NULL`,
      )
      .pluck(),
    legacyOtlpCall: db
      .prepare(`SELECT 1 FROM traces WHERE project_num = ? AND otlp_start_s IS NULL AND otlp_call_key = ? AND otlp_call_key IS NOT NULL`)
      .pluck(),
  };
  /** Until when OTLP calls may have claims from before D37 (see the migration), which still count. */
  const legacyClaimsUntil = (db.prepare(`SELECT until FROM legacy_otlp_claims`).pluck().get() as number | undefined) ?? 0;
  /** Until when OTLP calls stored before D44 (without their start) are looked up by key alone. */
  const legacyCallsUntil = (db.prepare(`SELECT until FROM legacy_otlp_calls`).pluck().get() as number | undefined) ?? 0;
  /** Whether this OTLP call is stored already under a key the unique index cannot see from its own start second. */
  const storedBeside = (projectNum: number, keyId: string, otlpCallKey: string, startS: number, now: number): boolean =>
    (now < legacyClaimsUntil && statements.legacyOtlpClaim.get(keyId, otlpCallKey, now - idempotencyWindowMs) !== undefined) ||
    (now < legacyCallsUntil && statements.legacyOtlpCall.get(projectNum, otlpCallKey) !== undefined) ||
    statements.otlpCallBeside.get(projectNum, startS, startS, otlpCallKey) !== undefined;
  const ids = idNumbering(db);
  const tagSets = setNumbering(db, tagSet, options.setsPerProject);
  const metadataSets = setNumbering(db, metadataSet, options.setsPerProject);
  /** A row's number of its set of one kind: NULL past the bound of sets, read from the row's JSON (D83, D86). */
  const setNumber = (sets: typeof tagSets, projectNum: number, json: string | null) =>
    json === null ? noSet : (sets.numberOf(projectNum, json) ?? null);

  const commit = db.transaction(({ traces, idempotencyKeys, quotaRemaining, deferRuns }: RowBatch, now: number): Duplicates => {
    const duplicates: Duplicates = { indexes: [], quotaRemaining: [] };
    const lastUse = new Map<string, number>();
    const stored: TraceValues[] = [];
    // The transaction's rows take consecutive sequence numbers from the first (no other writer meanwhile).
    let firstSeq: number | bigint | undefined;
    let lastSeq: number | bigint = 0;
    for (let i = 0; i < traces.length; i++) {
      const values = traces[i]!;
      const [placedAt, keyId, accountId] = values;
      const idempotencyKey = idempotencyKeys[i];
      const otlpCallKey = values[28];
      if (idempotencyKey != null) {
        const claimed = statements.claimIdempotencyKey.run(keyId, idempotencyKey, now, quotaRemaining[i], now - idempotencyWindowMs);
        if (claimed.changes === 0) {
          duplicates.indexes.push(i);
          duplicates.quotaRemaining.push(statements.rememberedQuota.get(keyId, idempotencyKey) as number | null);
          continue;
        }
      }
      const projectNum = ids.numberOf(accountId);
      const claimedBefore = otlpCallKey !== null && storedBeside(projectNum, keyId, otlpCallKey, values[29]!, now);
      if (!claimedBefore) errorGroups.assign(values);
      const inserted = claimedBefore
        ? undefined
        : statements.insertTrace.run(
            storedValues(values, ids.numberOf),
            setNumber(tagSets, projectNum, values[tagsAt] as string | null),
            setNumber(metadataSets, projectNum, values[metadataAt] as string | null),
          );
      if (!inserted || inserted.changes === 0) {
        duplicates.indexes.push(i);
        duplicates.quotaRemaining.push(null);
        continue;
      }
      firstSeq ??= inserted.lastInsertRowid;
      lastSeq = inserted.lastInsertRowid;
      stored.push(values);
      lastUse.set(keyId, values[35] ?? placedAt);
    }
    for (const [keyId, at] of lastUse) statements.touchKey.run(at, keyId);
    statements.forgetIdempotencyKeys.run(now - idempotencyWindowMs);
    partDone?.("rows");
    addToRollups(stored);
    partDone?.("rollups");
    errorGroups.add(stored);
    partDone?.("errorGroups");
    if (!deferRuns) addToRuns(stored);
    else if (firstSeq !== undefined) statements.noteRunsPending.run(firstSeq, lastSeq);
    partDone?.("runs");
    addToScopeCells(stored);
    partDone?.("scopeCells");
    return duplicates;
  });
  return (batch, now) => {
    ids.number(batchIds(batch.traces));
    tagSets.number(batchSets(batch.traces, tagsAt, ids.numberOf));
    metadataSets.number(batchSets(batch.traces, metadataAt, ids.numberOf));
    return commit(batch, now);
  };
}

/** The ids a batch's rows name by number. */
function* batchIds(traces: TraceValues[]): Generator<string> {
  for (const values of traces) for (const i of numberedIndexes) yield values[i] as string;
}

/** Where a row's tags and metadata JSON text are in TraceValues. */
const tagsAt = traceColumns.indexOf("tags");
const metadataAt = traceColumns.indexOf("metadata");

/** The (project number, JSON text) pairs of a batch's rows with the attribute at `at` (tags or metadata). */
function* batchSets(traces: TraceValues[], at: number, numberOf: (id: string) => number): Generator<[number, string]> {
  for (const values of traces) {
    const json = values[at] as string | null;
    if (json !== null) yield [numberOf(values[2]), json];
  }
}

/** A row's values as the traces table stores them: its key, project, provider and model as numbers. */
function storedValues(values: TraceValues, numberOf: (id: string) => number): unknown[] {
  const stored: unknown[] = values.slice();
  for (const i of numberedIndexes) stored[i] = numberOf(values[i] as string);
  return stored;
}
