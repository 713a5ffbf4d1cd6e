import Database from "better-sqlite3";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { migrations } from "../../src/store/sqlite/sqlite-schema.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { deleteTraces, overviewReads, rounded, storeAll, tableRows, undoAttributeSets, variedCalls, withUpgradedStore } from "../support/rollup-checks.js";
import { tempDir } from "../support/temp-dir.js";

/**
 * A user's Overview on the embedded store (D82): its totals, daily trend and latency over whole
 * days come from group_daily's rows of the user, and its reads by model, day, key and provider
 * from the user index, which covers them.
 */
const day = 86_400_000;
const today = Math.floor(Date.now() / day) * day;
/** Two values a day tracked (D54): a day's third user is counted under other. */
const groupValuesPerDay = 2;

/** Three past days and part of today, four users (and none), varied in key, model, status, latency and price check. */
const traces = variedCalls(200, (n) =>
  n < 180 ? today - (3 - (n % 3)) * day + n * 60_000 : Math.min(today + n * 1000, Date.now() - 1000),
).map((trace, n) => (n % 5 === 4 ? trace : Object.assign(trace, { userId: `user-${Math.floor(n / 7) % 4}` })));
const users = ["user-0", "user-1", "user-2", "user-3"];
const since = timestampFromMs(today - 3 * day);

/** The Overview's reads under each user, alone and with a status (with a key: from the user index only). */
async function overview(store: Store): Promise<unknown[]> {
  const answers: unknown[] = [];
  for (const userId of users) {
    for (const f of [{ userId }, { userId, status: "error" }, { userId, keyId: "key_b" }]) {
      answers.push(...(await overviewReads(store, "acc_a", create(TraceFilterSchema, { since, ...f }), false)));
    }
  }
  return answers;
}

const userIndexSql = (dir: string) =>
  (tableRows(dir, "SELECT sql FROM sqlite_master WHERE name = 'traces_account_user_received'") as { sql: string }[])[0]?.sql;

describe("embedded store: a user's Overview (D82)", () => {
  it("answers a user's totals, trend and latency over whole days from group_daily, not the traces", async () => {
    const dir = tempDir();
    const store = openSqliteStore(dir, { groupValuesPerDay });
    try {
      await storeAll(store, traces);
      const until = timestampFromMs(today);
      const reads = async (userId: string) => {
        const f = create(TraceFilterSchema, { since, until, userId });
        return [await store.usageTotals("acc_a", f), await store.usageByDayTotals("acc_a", f), await store.latencyHistogram("acc_a", f)];
      };
      const before = await Promise.all(users.map(reads));
      const tracked = before.map(([totals]) => (totals as { calls: bigint }).calls);
      expect(tracked.every((calls) => calls > 0n)).toBe(true);
      expect(deleteTraces(dir)).toBe(traces.length);
      const after = await Promise.all(users.map(reads));
      // Each day tracked two users: the others' days were counted under other, and come from the traces, now empty.
      const same = (a: unknown, b: unknown) =>
        JSON.stringify(rounded(a), (_key, v) => (typeof v === "bigint" ? Number(v) : v)) ===
        JSON.stringify(rounded(b), (_key, v) => (typeof v === "bigint" ? Number(v) : v));
      const unchanged = users.filter((_, i) => same(after[i], before[i]));
      expect(unchanged.length).toBeGreaterThan(0);
      expect(unchanged.length).toBeLessThan(users.length);
      // The reads by model come from the traces (the user index): none are left.
      expect(await store.usageByModel("acc_a", create(TraceFilterSchema, { since, until, userId: unchanged[0] }))).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it("upgrades a store written before it: the user index covers the reads, and every read answers as the writer's", async () => {
    await withUpgradedStore(
      (dir) => openSqliteStore(dir, { groupValuesPerDay }),
      traces,
      // The release before: the user index held its key alone (and no tag or metadata set, D83, D86).
      (dir) => {
        const db = new Database(join(dir, "calltrace.db"));
        try {
          const before = migrations.findIndex((m) => m.includes("DROP INDEX IF EXISTS traces_account_user_received"));
          expect(before).toBeGreaterThan(0);
          db.exec(`${undoAttributeSets}
            CREATE INDEX traces_account_user_received ON traces(project_num, user_id, received_at) WHERE user_id IS NOT NULL;`);
          db.pragma(`user_version = ${before}`);
        } finally {
          db.close();
        }
      },
      async ({ upgraded, upgradedDir, written, writtenDir }) => {
        expect(userIndexSql(upgradedDir)).toBe(userIndexSql(writtenDir));
        expect(userIndexSql(upgradedDir)).toContain("price_check");
        const answers = await overview(upgraded);
        const text = JSON.stringify(answers, (_key, v) => (typeof v === "bigint" ? Number(v) : v));
        expect(text).toContain('"calls":');
        expect(rounded(answers)).toEqual(rounded(await overview(written)));
      },
    );
  });
});
