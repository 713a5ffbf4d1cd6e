import Database from "better-sqlite3";

/**
 * Opens the embedded store's database file with the settings every connection needs: WAL so
 * readers and the writer do not block each other (and several processes can share the file),
 * synchronous=FULL so a commit is on disk before it is acknowledged, and a busy timeout for
 * the moments another process holds the write lock.
 */
export function openSqliteDatabase(file: string): Database.Database {
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.pragma("busy_timeout = 5000");
  db.pragma("foreign_keys = ON");
  return db;
}
