import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import {
  deleteTraces,
  variedCalls,
  overviewReads,
  rollBackBefore,
  rounded,
  storeAll,
  tableRows,
  withUpgradedStore,
} from "../support/rollup-checks.js";
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
const traces = variedCalls(240, (n) => now - 3 * day + Math.floor((((n * 7919) % 240) * (3 * day)) / 240));

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
        // Per hour for ranges of at most 48 hours (the 24h view's trends).
        answers.push(...(await overviewReads(store, "acc_a", create(TraceFilterSchema, { ...range, ...f }), range !== ranges[0])));
      }
    }
  }
  return answers;
}

const stored = (store: Store) => storeAll(store, traces);
const hourlyRows = (dir: string) =>
  tableRows(dir, `SELECT * FROM usage_hourly ORDER BY account_id, hour, environment, provider, model, status, key_id`);
const every = [undefined, "production", "staging", "dev"];

describe("embedded store: usage per hour (D73)", () => {
  it("answers the Overview's partial days and hours from the roll-up, not the traces", async () => {
    const dir = tempDir();
    const store = openSqliteStore(dir, { groupValuesPerDay });
    try {
      await stored(store);
      const before = await overview(store, every);
      expect(hourlyRows(dir).length).toBeGreaterThan(50);
      // The traces gone from under the store: what still answers came from the roll-ups.
      expect(deleteTraces(dir)).toBe(traces.length);
      expect((await store.usageTotals("acc_a", create(TraceFilterSchema, { ...ranges[0], userId: "u" }))).calls).toBe(0n);
      const after = await overview(store, every);
      // Without an environment: every figure as before.
      expect(after.length).toBe(before.length);
      const perEnvironment = before.length / ranges.length / every.length;
      const slice = (answers: unknown[], r: number, e: number) =>
        answers.slice((r * every.length + e) * perEnvironment, (r * every.length + e + 1) * perEnvironment);
      for (let r = 0; r < ranges.length; r++) expect(slice(after, r, 0), `range ${r}`).toEqual(slice(before, r, 0));
      // Some day counted an environment under other: that day is read from the traces, now gone.
      expect(after).not.toEqual(before);
    } finally {
      await store.close();
    }
  });

  it("back-fills a store written before it: the same rows and answers as the writer's", async () => {
    await withUpgradedStore(
      (dir) => openSqliteStore(dir, { groupValuesPerDay }),
      traces,
      (dir) => rollBackBefore(dir, "usage_hourly", ["usage_hourly", "latency_environment_daily", "runs_pending"]),
      async ({ upgraded, upgradedDir, written, writtenDir }) => {
        const rows = hourlyRows(upgradedDir);
        expect(rows.some((row) => (row as { environment: string }).environment === "\u0000other")).toBe(true);
        expect(rounded(rows)).toEqual(rounded(hourlyRows(writtenDir)));
        expect(rounded(await overview(upgraded, every))).toEqual(rounded(await overview(written, every)));
      },
    );
  });
});
