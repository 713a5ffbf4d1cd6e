import type Database from "better-sqlite3";
import { traceColumns, type TraceValues } from "./sqlite-trace-row.js";
import { sqliteUsageRollup } from "./sqlite-usage-rollup.js";

/** How long an Idempotency-Key is remembered (D14). */
export const idempotencyWindowMs = 24 * 60 * 60 * 1000;

/** A batch as the writer thread commits it: rows, and the Idempotency-Key each came with (or null). */
export interface RowBatch {
  traces: TraceValues[];
  idempotencyKeys: (string | null)[];
}

/**
 * Commits a batch of traces in one transaction, so a batch costs one fsync however many traces
 * it holds: idempotency claims, the rows, the keys' last use and the daily roll-ups together.
 * Answers the indexes of the traces not stored because their Idempotency-Key was seen before;
 * every other trace is stored.
 */
export function sqliteBatchCommit(db: Database.Database): (batch: RowBatch, now: number) => number[] {
  const addToRollups = sqliteUsageRollup(db);
  const statements = {
    insertTrace: db.prepare(`INSERT INTO traces (${traceColumns.join(", ")}) VALUES (${traceColumns.map(() => "?").join(", ")})`),
    claimIdempotencyKey: db.prepare(
      `INSERT INTO idempotency (key_id, idempotency_key, created_at) VALUES (?, ?, ?)
       ON CONFLICT (key_id, idempotency_key) DO UPDATE SET created_at = excluded.created_at WHERE created_at < ?`,
    ),
    forgetIdempotencyKeys: db.prepare(`DELETE FROM idempotency WHERE created_at < ?`),
    touchKey: db.prepare(`UPDATE api_keys SET last_used_at = ? WHERE id = ?`),
  };

  return db.transaction(({ traces, idempotencyKeys }: RowBatch, now: number): number[] => {
    const duplicates: number[] = [];
    const lastUse = new Map<string, number>();
    const stored: TraceValues[] = [];
    for (let i = 0; i < traces.length; i++) {
      const values = traces[i]!;
      const [receivedAt, keyId] = values;
      const idempotencyKey = idempotencyKeys[i];
      if (idempotencyKey != null) {
        const claimed = statements.claimIdempotencyKey.run(keyId, idempotencyKey, now, now - idempotencyWindowMs);
        if (claimed.changes === 0) {
          duplicates.push(i);
          continue;
        }
      }
      statements.insertTrace.run(values);
      stored.push(values);
      lastUse.set(keyId, receivedAt);
    }
    for (const [keyId, at] of lastUse) statements.touchKey.run(at, keyId);
    addToRollups(stored);
    statements.forgetIdempotencyKeys.run(now - idempotencyWindowMs);
    return duplicates;
  });
}
