// What each index of the embedded store's traces table adds to a stored row, in CPU on one thread.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { openSqliteDatabase } from "../../src/store/sqlite/sqlite-database.js";
import { numberedIndexes, storedTraceColumns, storedTraceValuesSql, type TraceValues } from "../../src/store/sqlite/sqlite-trace-row.js";
import { threadCpuNs } from "./thread-cpu.js";

export interface IndexCosts {
  /** A row in the traces table with none of its indexes, µs. */
  rowUs: number;
  /** Each index's addition to that, µs per row, by the index's name. */
  indexes: { name: string; us: number }[];
}

/**
 * Inserts `rows` in commits of `perCommit` (durable, as the writer commits) into scratch copies
 * of the traces table of the store in `storeFile`: the table alone, then the table with each of
 * its indexes alone. An index's cost is its copy's CPU less the table's alone: a split of the
 * writer's "rows" part, not its sum (the indexes share the page cache in the real table).
 */
export function traceIndexCosts(storeFile: string, rows: TraceValues[], perCommit: number): IndexCosts {
  const store = new Database(storeFile, { readonly: true });
  const tableSql = store.prepare(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'traces'`).pluck().get() as string;
  const indexes = store
    .prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'traces' AND sql IS NOT NULL ORDER BY name`)
    .all() as { name: string; sql: string }[];
  store.close();
  // The table stores a key, a project, a provider and a model by number (D65, D68): one of each here.
  const stored = rows.map((values) => values.map((v, i) => (numberedIndexes.includes(i) ? 1 : v)));
  const insertAll = (indexSql?: string): number => {
    const dir = mkdtempSync(join(tmpdir(), "calltrace-index-costs-"));
    const db = openSqliteDatabase(join(dir, "traces.db"));
    try {
      db.exec(tableSql);
      if (indexSql) db.exec(indexSql);
      const insert = db.prepare(`INSERT INTO traces (${storedTraceColumns.join(", ")}) VALUES (${storedTraceValuesSql})`);
      const commit = db.transaction((batch: unknown[][]) => {
        for (const values of batch) insert.run(values);
      });
      const before = threadCpuNs();
      for (let i = 0; i < stored.length; i += perCommit) commit(stored.slice(i, i + perCommit));
      return (threadCpuNs() - before) / 1000 / rows.length;
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const rowUs = insertAll();
  return { rowUs, indexes: indexes.map(({ name, sql }) => ({ name, us: insertAll(sql) - rowUs })) };
}
