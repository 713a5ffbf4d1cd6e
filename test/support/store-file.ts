import { join } from "node:path";
import Database from "better-sqlite3";
import { deferrableTraceIndexes } from "../../src/store/sqlite/sqlite-schema.js";

/** Reads the embedded store's file in `dir` on a read-only connection of its own, beside any store open on it. */
export function readStoreFile<T>(dir: string, read: (db: Database.Database) => T): T {
  const db = new Database(join(dir, "calltrace.db"), { readonly: true });
  try {
    return read(db);
  } finally {
    db.close();
  }
}

/** The one number a query answers, e.g. a COUNT(*). */
export const countInStoreFile = (dir: string, sql: string): number => readStoreFile(dir, (db) => db.prepare(sql).pluck().get() as number);

/** The traces' deferrable indexes (D77) the file has now, by name. */
export const presentDeferrable = (dir: string): string[] =>
  readStoreFile(dir, (db) =>
    (db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'traces'").pluck().all() as string[])
      .filter((name) => name in deferrableTraceIndexes)
      .sort(),
  );
