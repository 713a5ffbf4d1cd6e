import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism, hostname } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { defersIndexes } from "../../src/import/deferred-indexes.js";
import { withBuildSettings } from "../../src/store/sqlite/sqlite-deferred-indexes.js";
import { deferrableTraceIndexes } from "../../src/store/sqlite/sqlite-schema.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { presentDeferrable } from "../support/store-file.js";
import { tempDir } from "../support/temp-dir.js";

const all = Object.keys(deferrableTraceIndexes).sort();

describe("the traces' deferrable indexes (D77)", () => {
  it("are written as the latest migration leaves them", async () => {
    const dir = tempDir();
    await openSqliteStore(dir).close();
    const db = new Database(join(dir, "calltrace.db"), { readonly: true });
    const sql = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?").pluck();
    for (const [name, definition] of Object.entries(deferrableTraceIndexes))
      expect(sql.get(name)).toBe(`CREATE INDEX ${name} ON ${definition}`);
    db.close();
  });

  it("are built with a build's settings (sort memory, lock wait, sort threads on the other cores), the connection's own back after, also after a failure", () => {
    const db = new Database(join(tempDir(), "settings.db"));
    db.pragma("busy_timeout = 20");
    db.pragma("cache_size = -4000");
    const settings = () => ({
      cacheSize: db.pragma("cache_size", { simple: true }),
      busyTimeout: db.pragma("busy_timeout", { simple: true }),
      threads: db.pragma("threads", { simple: true }),
    });
    const own = settings();
    expect(own).toEqual({ cacheSize: -4000, busyTimeout: 20, threads: 0 });
    const during = withBuildSettings(db, settings);
    expect(during).toEqual({ cacheSize: -256 * 1024, busyTimeout: 10 * 60_000, threads: Math.min(availableParallelism() - 1, 8) });
    expect(settings()).toEqual(own);
    expect(() =>
      withBuildSettings(db, () => {
        throw new Error("disk full");
      }),
    ).toThrow("disk full");
    expect(settings()).toEqual(own);
    db.close();
  });

  it("a store opened while another process holds the write lock longer than the usual 5 s wait (a long migration) waits for it, then opens", async () => {
    const dir = tempDir();
    await openSqliteStore(dir).close();
    const holder = spawn(
      process.execPath,
      [
        "-e",
        `const db = new (require(${JSON.stringify(createRequire(import.meta.url).resolve("better-sqlite3"))}))(${JSON.stringify(join(dir, "calltrace.db"))});
         db.exec("BEGIN IMMEDIATE"); console.log("locked"); setTimeout(() => { db.exec("COMMIT"); db.close(); }, 7000);`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout!.on("data", (chunk: Buffer) => chunk.toString().includes("locked") && resolve());
        holder.once("exit", (code) => reject(new Error(`the lock holder exited ${code}`)));
      });
      const started = Date.now();
      const store = openSqliteStore(dir);
      expect(Date.now() - started).toBeGreaterThan(5_500);
      await store.close();
    } finally {
      holder.kill();
    }
  }, 30_000);

  it("are dropped under a mark naming this process, left missing by another open in it, and built again when asked", async () => {
    const dir = tempDir();
    const store = openSqliteStore(dir);
    const mark = join(dir, "calltrace.db-import");
    expect(store.deferrableIndexes!.drop().sort()).toEqual(all);
    expect(presentDeferrable(dir)).toEqual([]);
    expect(existsSync(mark)).toBe(true);
    // Another store this process opens on the same file meanwhile leaves them to the import.
    await openSqliteStore(dir).close();
    expect(presentDeferrable(dir)).toEqual([]);
    const built: string[] = [];
    store.deferrableIndexes!.rebuild((what) => built.push(what));
    expect(built.sort()).toEqual(all.map((name) => `index ${name}`));
    expect(presentDeferrable(dir)).toEqual(all);
    expect(existsSync(mark)).toBe(false);
    await store.close();
  });

  it("stay missing when another process opens the store while the importing one lives, and are built at open once it is gone", async () => {
    const dir = tempDir();
    // The "importer": a live process of this host whose id the mark names.
    const importer = spawn("sleep", ["60"], { stdio: "ignore" });
    const exited = new Promise((resolve) => importer.once("exit", resolve));
    try {
      // What the importer did: its mark, then the drop.
      await openSqliteStore(dir).close();
      const markFile = join(dir, "calltrace.db-import");
      writeFileSync(markFile, JSON.stringify({ pid: importer.pid, host: hostname() }));
      const db = new Database(join(dir, "calltrace.db"));
      for (const name of all) db.exec(`DROP INDEX ${name}`);
      db.close();

      await openSqliteStore(dir).close();
      expect(presentDeferrable(dir)).toEqual([]);

      importer.kill("SIGKILL");
      await exited;
      await openSqliteStore(dir).close();
      expect(presentDeferrable(dir)).toEqual(all);
      expect(existsSync(markFile)).toBe(false);
    } finally {
      importer.kill("SIGKILL");
    }
  });

  it("are built at open when missing with no mark at all", async () => {
    const dir = tempDir();
    await openSqliteStore(dir).close();
    const db = new Database(join(dir, "calltrace.db"));
    db.exec("DROP INDEX traces_account_cost; DROP INDEX traces_account_user_received");
    db.close();
    await openSqliteStore(dir).close();
    expect(presentDeferrable(dir)).toEqual(all);
  });

  it("are built at open when the mark names this process's id but this process holds no mark (a restarted container's reused id)", async () => {
    const dir = tempDir();
    await openSqliteStore(dir).close();
    writeFileSync(join(dir, "calltrace.db-import"), JSON.stringify({ pid: process.pid, host: hostname() }));
    const db = new Database(join(dir, "calltrace.db"));
    db.exec("DROP INDEX traces_account_tokens");
    db.close();
    await openSqliteStore(dir).close();
    expect(presentDeferrable(dir)).toEqual(all);
    expect(existsSync(join(dir, "calltrace.db-import"))).toBe(false);
  });

  it("are deferred on auto for an import of at least 100,000 traces that at least doubles the store; on and off force it", () => {
    expect(defersIndexes("auto", 100_000, 0)).toBe(true);
    expect(defersIndexes("auto", 99_999, 0)).toBe(false);
    expect(defersIndexes("auto", 2_000_000, 2_000_000)).toBe(true);
    expect(defersIndexes("auto", 2_000_000, 2_000_001)).toBe(false);
    expect(defersIndexes("on", 1, 10_000_000)).toBe(true);
    expect(defersIndexes("off", 10_000_000, 0)).toBe(false);
  });
});
