import Database from "better-sqlite3";

/**
 * WAL pages between automatic checkpoints (SQLite's default is 1,000). A checkpoint copies every
 * page the WAL holds back into the database file, on the writing thread; an index insert at a random
 * position (a random trace id, a cost) dirties a page of its own, so most of a row's cost was
 * writing pages and writing them back. Rarer checkpoints write back a page once for all its
 * changes in between (measured at 700,000 rows: 69 -> 56 us of CPU per OTLP row, 135 -> 103 with
 * varied costs and latencies), for a WAL of up to about 40 MB.
 */
export const walAutocheckpointPages = 10_000;

/**
 * Opens the embedded store's database file with the settings every connection needs: WAL so
 * readers and the writer do not block each other (and several processes can share the file),
 * synchronous=FULL so a commit is on disk before it is acknowledged, and a busy timeout for
 * the moments another process holds the write lock (the writer thread waits its own way).
 */
export function openSqliteDatabase(file: string, busyTimeoutMs = 5000): Database.Database {
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  db.pragma("foreign_keys = ON");
  return db;
}

/**
 * The writer connection's page cache, in KiB (SQLite's default is 2,000 KiB). Every trace inserts
 * into a dozen indexes at positions all over them (a cost, a latency, a user) and into the
 * roll-ups' rows: once a store outgrows the cache, each of those reads a page back from the file.
 * The cache only grows as pages are read, so a small store never takes it all.
 */
export const writerCacheKiB = 256 * 1024;

/** The writer thread's connection (sqlite-write-worker.ts; a benchmark commits through the same settings). */
export function openSqliteWriter(file: string, busyTimeoutMs?: number): Database.Database {
  const db = openSqliteDatabase(file, busyTimeoutMs);
  db.pragma(`wal_autocheckpoint = ${walAutocheckpointPages}`);
  db.pragma(`cache_size = -${writerCacheKiB}`);
  return db;
}
