import Database from "better-sqlite3";

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
