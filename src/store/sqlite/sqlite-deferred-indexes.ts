import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, hostname } from "node:os";
import type Database from "better-sqlite3";
import type { DeferrableIndexes } from "../store.js";
import { sqlitePendingRuns } from "./sqlite-run-rollup.js";
import { deferrableTraceIndexes } from "./sqlite-schema.js";

/** Sort memory of an index build, in KiB: SQLite's sorter spills to temporary files past the page cache. */
const buildCacheKiB = 256 * 1024;
/** How long a build waits for the write lock: another process may be building the same index. */
const buildBusyTimeoutMs = 10 * 60_000;
/**
 * Helper threads of a build's sorts (SQLite's `threads`, 0 by default): the import's own threads
 * are done by then, so the other cores sort too (D84).
 */
const buildSortThreads = Math.min(availableParallelism() - 1, 8);

/**
 * Runs `build` on `db` with an index build's settings (a large sort memory, a patient lock wait,
 * helper threads for the sorts), and puts the connection's own back after, whatever happens.
 */
export function withBuildSettings<T>(db: Database.Database, build: () => T): T {
  const settings = { cache_size: -buildCacheKiB, busy_timeout: buildBusyTimeoutMs, threads: buildSortThreads };
  const own = Object.fromEntries(Object.keys(settings).map((name) => [name, db.pragma(name, { simple: true })]));
  try {
    for (const [name, value] of Object.entries(settings)) db.pragma(`${name} = ${value}`);
    return build();
  } finally {
    for (const [name, value] of Object.entries(own)) db.pragma(`${name} = ${value}`);
  }
}

/** The marks this process wrote: another store it opens on the same file must not build the indexes. */
const marksHeld = new Set<string>();

/** Who dropped the indexes: a process on a host. */
interface ImportMark {
  pid: number;
  host: string;
}

/**
 * The traces' deferrable indexes (D77) and the runs roll-up (D81) on the store's connection.
 * `markFile` beside the database says which process dropped the indexes and left its rows' runs
 * pending: while it runs, other processes opening the store leave both so (reads of traces stay
 * correct, slower; the Runs view lacks the import's calls); once it is gone (killed, crashed), the
 * next open builds them. `deferring()`: whether this store's writes leave their runs pending now.
 */
export function sqliteDeferredIndexes(
  db: Database.Database,
  markFile: string,
): DeferrableIndexes & { deferring(): boolean; rebuildUnlessImporting(): void } {
  const storedTraces = db.prepare("SELECT COALESCE(MAX(seq), 0) FROM traces").pluck();
  const presentIndexes = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'traces'").pluck();
  const names = Object.keys(deferrableTraceIndexes);
  const runs = sqlitePendingRuns(db);
  let deferring = false;
  const missing = () => {
    const present = new Set(presentIndexes.all() as string[]);
    return names.filter((name) => !present.has(name));
  };
  const rebuild = (onBuilt?: (what: string, ms: number) => void) => {
    deferring = false;
    const lacking = missing();
    const runsPending = runs.pendingRuns();
    if (lacking.length > 0 || runsPending) {
      withBuildSettings(db, () => {
        for (const name of lacking) {
          const started = performance.now();
          // IF NOT EXISTS: another process may have built it while this one waited for the lock.
          db.exec(`CREATE INDEX IF NOT EXISTS ${name} ON ${deferrableTraceIndexes[name]}`);
          onBuilt?.(`index ${name}`, performance.now() - started);
        }
        if (runsPending) {
          const started = performance.now();
          runs.addPendingRuns();
          onBuilt?.("the runs roll-up", performance.now() - started);
        }
      });
    }
    rmSync(markFile, { force: true });
    marksHeld.delete(markFile);
  };
  return {
    storedTraces: () => storedTraces.get() as number,
    drop() {
      // The mark first: a crash between the two leaves a mark and every index, which open clears.
      writeFileSync(markFile, JSON.stringify({ pid: process.pid, host: hostname() } satisfies ImportMark));
      marksHeld.add(markFile);
      db.transaction(() => {
        for (const name of names) db.exec(`DROP INDEX IF EXISTS ${name}`);
      }).immediate();
      deferring = true;
      return names;
    },
    deferring: () => deferring,
    rebuild,
    rebuildUnlessImporting() {
      if ((missing().length > 0 || runs.pendingRuns()) && !importing(markFile)) rebuild();
    },
  };
}

/**
 * Whether an import still runs: this process's, or the one the mark names, alive on this host (a
 * mark naming this process's id but not held by it is a dead process's, as in a restarted container).
 */
function importing(markFile: string): boolean {
  if (marksHeld.has(markFile)) return true;
  let mark: ImportMark;
  try {
    mark = JSON.parse(readFileSync(markFile, "utf8")) as ImportMark;
  } catch {
    return false;
  }
  if (mark.host !== hostname() || mark.pid === process.pid) return false;
  try {
    process.kill(mark.pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive, under another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
