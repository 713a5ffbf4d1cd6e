import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { PriceCheck } from "../../gen/calltrace/v1/trace_pb.js";
import { migrations } from "../../src/store/sqlite/sqlite-schema.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { call } from "../support/stored-call.js";
import { tempDir } from "../support/temp-dir.js";

/**
 * The Overview's partial days and hourly trends on the embedded store (D73): usage_hourly, kept by
 * the writer and back-filled by its migration, answers the whole hours of a range's partial days
 * and the reads per hour, so a range starting on an hour reads no trace.
 */
const hour = 3_600_000;
const day = 24 * hour;
const now = Date.now();
const thisHour = Math.floor(now / hour) * hour;
/** Two values a day tracked (D54): a day's third environment is counted under other. */
const groupValuesPerDay = 2;

/** Three days of calls up to now in three environments (and none), varied in key, model, status, latency and price check. */
const traces = Array.from({ length: 240 }, (_, n) =>
  call({
    at: now - 3 * day + Math.floor(((n * 7919) % 240) * (3 * day) / 240),
    keyId: ["key_a", "key_b"][n % 2]!,
    ...([["openai", "gpt-4o"], ["anthropic", "claude-sonnet-4"], ["openai", "o3"]] as const)
      .map(([provider, model]) => ({ provider, model }))[n % 5 % 3]!,
    status: n % 7 === 0 ? "error" : "success",
    latencyMs: 40 + ((n * 37) % 900),
    costUsd: (n % 11) / 1000,
    tokensIn: n,
    priceCheck: [PriceCheck.MATCH, PriceCheck.UNPRICED, PriceCheck.MISMATCH][n % 3]!,
    ...(n % 4 === 3 ? {} : { environment: ["production", "staging", "dev"][Math.floor(n / 9) % 3] }),
  }),
);

/** Ranges starting on an hour (mid-day), as the Overview's 30d, 7d and 24h views, hour-aligned, and the previous period's. */
const ranges = [
  { since: timestampFromMs(thisHour - 2 * day - 5 * hour) },
  { since: timestampFromMs(thisHour - 30 * hour), until: timestampFromMs(thisHour - 3 * hour) },
  { since: timestampFromMs(thisHour - 24 * hour) },
];

/** Every read of the Overview, per hour too, under no filter, each environment and a provider. */
async function overview(store: Store, environments: (string | undefined)[]) {
  const answers: unknown[] = [];
  for (const range of ranges) {
    for (const environment of environments) {
      for (const f of [{ environment }, { environment, provider: "openai", status: "success" }]) {
        const filter = create(TraceFilterSchema, { ...range, ...f });
        answers.push(
          await store.usageTotals("acc_a", filter),
          await store.usageByModel("acc_a", filter),
          await store.usageByDay("acc_a", filter),
          await store.usageByDayTotals("acc_a", filter),
          // Per hour for ranges of at most 48 hours (the 24h view's trends).
          range === ranges[0] ? [] : await store.usageByHourTotals("acc_a", filter),
          await store.latencyHistogram("acc_a", filter),
          await store.usageByGroup("acc_a", filter, { kind: "key" }, 10),
          await store.usageByGroup("acc_a", filter, { kind: "provider" }, 10),
        );
      }
    }
  }
  return answers;
}

/** Sums of costs in another order differ in their last bits: compared to 12 significant digits. */
const rounded = (value: unknown): unknown =>
  typeof value === "number"
    ? Number(value.toPrecision(12))
    : Array.isArray(value)
      ? value.map(rounded)
      : value !== null && typeof value === "object"
        ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rounded(v)]))
        : value;

const stored = (store: Store) => store.writeBatch(traces.map((trace) => ({ trace, idempotencyKey: undefined })));
const tableRows = (dir: string) => {
  const db = new Database(join(dir, "calltrace.db"), { readonly: true });
  try {
    return db.prepare(`SELECT * FROM usage_hourly ORDER BY account_id, hour, environment, provider, model, status, key_id`).all();
  } finally {
    db.close();
  }
};
const every = [undefined, "production", "staging", "dev"];

describe("embedded store: usage per hour (D73)", () => {
  it("answers the Overview's partial days and hours from the roll-up, not the traces", async () => {
    const dir = tempDir();
    const store = openSqliteStore(dir, { groupValuesPerDay });
    try {
      await stored(store);
      const before = await overview(store, every);
      expect(tableRows(dir).length).toBeGreaterThan(50);
      // The traces gone from under the store: what still answers came from the roll-ups.
      const db = new Database(join(dir, "calltrace.db"));
      expect(db.prepare("DELETE FROM traces").run().changes).toBe(traces.length);
      db.close();
      expect((await store.usageTotals("acc_a", create(TraceFilterSchema, { ...ranges[0], userId: "u" }))).calls).toBe(0n);
      const after = await overview(store, every);
      // Without an environment: every figure as before.
      expect(after.length).toBe(before.length);
      const perEnvironment = before.length / ranges.length / every.length;
      const slice = (answers: unknown[], r: number, e: number) => answers.slice((r * every.length + e) * perEnvironment, (r * every.length + e + 1) * perEnvironment);
      for (let r = 0; r < ranges.length; r++) expect(slice(after, r, 0), `range ${r}`).toEqual(slice(before, r, 0));
      // Some day counted an environment under other: that day is read from the traces, now gone.
      expect(after).not.toEqual(before);
    } finally {
      await store.close();
    }
  });

  it("back-fills a store written before it: the same rows and answers as the writer's", async () => {
    const writtenDir = tempDir();
    const written = openSqliteStore(writtenDir, { groupValuesPerDay });
    const oldDir = tempDir();
    const old = openSqliteStore(oldDir, { groupValuesPerDay });
    try {
      await stored(written);
      await stored(old);
    } finally {
      await old.close();
    }
    const db = new Database(join(oldDir, "calltrace.db"));
    const before = migrations.findIndex((m) => m.includes("CREATE TABLE usage_hourly"));
    expect(before).toBeGreaterThan(0);
    db.exec("DROP TABLE usage_hourly; DROP TABLE latency_environment_daily");
    db.pragma(`user_version = ${before}`);
    db.close();
    const upgraded = openSqliteStore(oldDir, { groupValuesPerDay });
    try {
      const rows = tableRows(oldDir);
      expect(rows.some((row) => (row as { environment: string }).environment === "\u0000other")).toBe(true);
      expect(rounded(rows)).toEqual(rounded(tableRows(writtenDir)));
      expect(rounded(await overview(upgraded, every))).toEqual(rounded(await overview(written, every)));
    } finally {
      await upgraded.close();
      await written.close();
    }
  });
});
