import Database from "better-sqlite3";
import { join } from "node:path";
import type { TraceFilter } from "../../gen/calltrace/v1/query_pb.js";
import { PriceCheck, type StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import type { GroupDimension } from "../../src/store/group-dimension.js";
import { migrations } from "../../src/store/sqlite/sqlite-schema.js";
import type { Store } from "../../src/store/store.js";
import { call } from "./stored-call.js";
import { readStoreFile } from "./store-file.js";
import { tempDir } from "./temp-dir.js";

// What the embedded store's roll-up tests share: the Overview's reads, a store left as an older
// release left it, and the rows of its tables.

/**
 * `count` calls at `at(n)` in three environments (and none, every fourth), varied in key, model,
 * status, latency and price check.
 */
export function variedCalls(count: number, at: (n: number) => number): StoredTrace[] {
  const models = [
    ["openai", "gpt-4o"],
    ["anthropic", "claude-sonnet-4"],
    ["openai", "o3"],
  ] as const;
  return Array.from({ length: count }, (_, n) => {
    const [provider, model] = models[(n % 5) % 3]!;
    return call({
      at: at(n),
      keyId: ["key_a", "key_b"][n % 2]!,
      provider,
      model,
      status: n % 7 === 0 ? "error" : "success",
      latencyMs: 40 + ((n * 37) % 900),
      costUsd: (n % 11) / 1000,
      tokensIn: n,
      priceCheck: [PriceCheck.MATCH, PriceCheck.UNPRICED, PriceCheck.MISMATCH][n % 3]!,
      ...(n % 4 === 3 ? {} : { environment: ["production", "staging", "dev"][Math.floor(n / 9) % 3] }),
    });
  });
}

/** Sums of costs in another order differ in their last bits: numbers compared to 12 significant digits. */
export const rounded = (value: unknown): unknown =>
  typeof value === "number"
    ? Number(value.toPrecision(12))
    : Array.isArray(value)
      ? value.map(rounded)
      : value !== null && typeof value === "object"
        ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rounded(v)]))
        : value;

/** Writes the traces through the store's batch path. */
export const storeAll = (store: Store, traces: StoredTrace[]) =>
  store.writeBatch(traces.map((trace) => ({ trace, idempotencyKey: undefined })));

/** Every row the queries select, in turn, from the embedded store in `dir`. */
export const tableRows = (dir: string, ...queries: string[]): unknown[] =>
  readStoreFile(dir, (db) => queries.flatMap((sql) => db.prepare(sql).all()));

/** Deletes every trace from under the embedded store in `dir`, so that what still answers comes from its roll-ups; answers how many. */
export function deleteTraces(dir: string): number {
  const db = new Database(join(dir, "calltrace.db"));
  try {
    return db.prepare("DELETE FROM traces").run().changes;
  } finally {
    db.close();
  }
}

/** The Overview's reads of one account and filter, as its page makes them; the trends per hour if `hourly` (else an empty place). */
export async function overviewReads(store: Store, accountId: string, filter: TraceFilter, hourly: boolean): Promise<unknown[]> {
  return [
    await store.usageTotals(accountId, filter),
    await store.usageByModel(accountId, filter),
    await store.usageByDay(accountId, filter),
    await store.usageByDayTotals(accountId, filter),
    hourly ? await store.usageByHourTotals(accountId, filter) : [],
    await store.latencyHistogram(accountId, filter),
    await store.usageByGroup(accountId, filter, { kind: "key" }, 10),
    await store.usageByGroup(accountId, filter, { kind: "provider" }, 10),
  ];
}

/**
 * SQL undoing the latest migrations, newest first, each with the table it creates (D86: metadata
 * sets, D83: tag sets), which a store rolled back to an earlier release runs again: its table, and
 * its column with the index that holds it.
 */
const undoLatest = [
  { table: "metadata_sets", sql: `DROP TABLE metadata_sets; DROP INDEX IF EXISTS traces_account_user_received; ALTER TABLE traces DROP COLUMN metadata_num;` },
  { table: "tag_sets", sql: `DROP TABLE tag_sets; DROP INDEX IF EXISTS traces_account_user_received; ALTER TABLE traces DROP COLUMN tags_num;` },
];

/** SQL undoing every migration of undoLatest: the store as the release before D83 left it, but for the user index (dropped). */
export const undoAttributeSets = undoLatest.map((undo) => undo.sql).join("\n");

/**
 * Leaves the embedded store in `dir` as the release before the migration that creates `table`
 * left it: undoes that migration and the later ones of undoLatest, drops the tables `drop` (that
 * one's and later ones'), runs `sql`, and sets its schema version back, so that opening it runs
 * those migrations again.
 */
export function rollBackBefore(dir: string, table: string, drop: string[], sql = ""): void {
  const db = new Database(join(dir, "calltrace.db"));
  try {
    const created = (name: string) => migrations.findIndex((m) => m.includes(`CREATE TABLE ${name}`));
    const before = created(table);
    if (before <= 0) throw new Error(`no migration creates ${table}`);
    const undo = undoLatest.filter((u) => created(u.table) >= before).map((u) => u.sql);
    db.exec(undo.join("\n") + drop.map((name) => `DROP TABLE ${name};`).join("\n") + sql);
    db.pragma(`user_version = ${before}`);
  } finally {
    db.close();
  }
}

/** The two stores `withUpgradedStore` compares, and their directories. */
export interface UpgradedStores {
  upgraded: Store;
  upgradedDir: string;
  written: Store;
  writtenDir: string;
}

/**
 * Two embedded stores holding the same traces: one as the writer keeps it, the other rolled back
 * by `rollBack` (rollBackBefore) and opened again, which upgrades it; `check` compares them.
 */
export async function withUpgradedStore(
  open: (dir: string) => Store,
  traces: StoredTrace[],
  rollBack: (dir: string) => void,
  check: (stores: UpgradedStores) => Promise<void>,
): Promise<void> {
  const writtenDir = tempDir();
  const written = open(writtenDir);
  try {
    const upgradedDir = tempDir();
    const old = open(upgradedDir);
    try {
      await storeAll(written, traces);
      await storeAll(old, traces);
    } finally {
      await old.close();
    }
    rollBack(upgradedDir);
    const upgraded = open(upgradedDir);
    try {
      await check({ upgraded, upgradedDir, written, writtenDir });
    } finally {
      await upgraded.close();
    }
  } finally {
    await written.close();
  }
}

/** The dimensions group_daily keeps: the Attribution page's group-bys that read it. */
export const groupDailyDimensions: GroupDimension[] = [
  { kind: "user" },
  { kind: "session" },
  { kind: "tag" },
  { kind: "metadata", key: "feature" },
  { kind: "metadataKey" },
  { kind: "environment" },
];
