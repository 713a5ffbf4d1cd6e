// Seeds the embedded store through its own batch commit (src/store/sqlite/sqlite-batch-commit.ts:
// the transaction the writer thread runs, rows, indexes and roll-ups together), called on this
// thread in batches far larger than a request's, with a page cache that holds the indexes' hot
// pages: the fastest bulk write path the store has while `traces import` has none of its own.
import { join } from "node:path";
import { type RowBatch, sqliteBatchCommit } from "../../src/store/sqlite/sqlite-batch-commit.js";
import { openSqliteDatabase } from "../../src/store/sqlite/sqlite-database.js";
import { writeToRow } from "../../src/store/sqlite/sqlite-trace-row.js";
import type { TraceWrite } from "../../src/store/trace-store.js";
import { defaultValuesPerDay, valueCap } from "../../src/store/value-cap.js";

export interface SeedRate {
  traces: number;
  seconds: number;
  tracesPerSecond: number;
}

/** Traces per commit: one fsync and one roll-up pass each. */
const batchSize = 20_000;
/** The seeding connection's page cache (SQLite's default is 2 MB), in KiB. */
const cacheKiB = 1 << 20;

/**
 * Writes `total` traces, the `i`th from `traceAt(i)`, into the store in `dataDir` (opened and
 * migrated by the store before, and closed: this connection is the only writer). Answers the rate.
 */
export function bulkSeed(dataDir: string, total: number, traceAt: (i: number) => TraceWrite, progress?: (line: string) => void): SeedRate {
  const db = openSqliteDatabase(join(dataDir, "calltrace.db"));
  db.pragma(`cache_size = -${cacheKiB}`);
  // The service's default bound on values per attribute and day (D54), as a store in use has it.
  const commit = sqliteBatchCommit(db, valueCap(defaultValuesPerDay));
  const started = performance.now();
  try {
    for (let i = 0; i < total; ) {
      const batch: RowBatch = { traces: [], idempotencyKeys: [], quotaRemaining: [] };
      for (const end = Math.min(total, i + batchSize); i < end; i++) {
        const { values, claimKey } = writeToRow(traceAt(i));
        batch.traces.push(values);
        batch.idempotencyKeys.push(claimKey);
        batch.quotaRemaining.push(null);
      }
      commit(batch, Date.now());
      if (progress && (i % 500_000 < batchSize || i === total))
        progress(
          `seeded ${i.toLocaleString("en-US")} / ${total.toLocaleString("en-US")} (${Math.round((performance.now() - started) / 1000)} s)`,
        );
    }
    db.pragma("wal_checkpoint(TRUNCATE)");
  } finally {
    db.close();
  }
  const seconds = (performance.now() - started) / 1000;
  return { traces: total, seconds, tracesPerSecond: total / seconds };
}
