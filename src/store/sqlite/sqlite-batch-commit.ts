import type Database from "better-sqlite3";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { StoredTrace } from "../../../gen/calltrace/v1/trace_pb.js";
import type { TraceWrite, WriteOutcome } from "../trace-store.js";
import { traceToRow } from "./sqlite-trace-row.js";
import { sqliteUsageRollup } from "./sqlite-usage-rollup.js";

/** How long an Idempotency-Key is remembered (D14). */
export const idempotencyWindowMs = 24 * 60 * 60 * 1000;

/**
 * Commits a batch of traces in one transaction, so a batch costs one fsync however many traces
 * it holds: idempotency claims, the rows, the keys' last use and the daily roll-ups together.
 */
export function sqliteBatchCommit(db: Database.Database): (writes: TraceWrite[], now: number) => WriteOutcome[] {
  const addToRollups = sqliteUsageRollup(db);
  const statements = {
    insertTrace: db.prepare(
      `INSERT INTO traces (received_at, key_id, account_id, country, provider, model, tokens_in, tokens_out, latency_ms, cost_usd, status, error)
       VALUES (@received_at, @key_id, @account_id, @country, @provider, @model, @tokens_in, @tokens_out, @latency_ms, @cost_usd, @status, @error)`,
    ),
    claimIdempotencyKey: db.prepare(
      `INSERT INTO idempotency (key_id, idempotency_key, created_at) VALUES (?, ?, ?)
       ON CONFLICT (key_id, idempotency_key) DO UPDATE SET created_at = excluded.created_at WHERE created_at < ?`,
    ),
    forgetIdempotencyKeys: db.prepare(`DELETE FROM idempotency WHERE created_at < ?`),
    touchKey: db.prepare(`UPDATE api_keys SET last_used_at = ? WHERE id = ?`),
  };

  return db.transaction((writes: TraceWrite[], now: number): WriteOutcome[] => {
    const outcomes: WriteOutcome[] = [];
    const lastUse = new Map<string, number>();
    const stored: StoredTrace[] = [];
    for (const { trace, idempotencyKey } of writes) {
      if (idempotencyKey !== undefined) {
        const claimed = statements.claimIdempotencyKey.run(trace.keyId, idempotencyKey, now, now - idempotencyWindowMs);
        if (claimed.changes === 0) {
          outcomes.push({ kind: "duplicate" });
          continue;
        }
      }
      statements.insertTrace.run(traceToRow(trace));
      stored.push(trace);
      lastUse.set(trace.keyId, timestampMs(trace.receivedAt!));
      outcomes.push({ kind: "stored" });
    }
    for (const [keyId, at] of lastUse) statements.touchKey.run(at, keyId);
    addToRollups(stored);
    statements.forgetIdempotencyKeys.run(now - idempotencyWindowMs);
    return outcomes;
  });
}
