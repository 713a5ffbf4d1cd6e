import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { groupDailyDimensions, rollBackBefore, rounded, tableRows, withUpgradedStore } from "../support/rollup-checks.js";
import { call } from "../support/stored-call.js";

/**
 * group_daily keyed by day before value (D78): its migration copies a store's rows under the new
 * key, and every group-by answers from them as from the writer's.
 */
const day = 86_400_000;
const now = Date.now();
/** Two values a day tracked (D54): a day's third user, session, tag or environment counts as other. */
const groupValuesPerDay = 2;

const traces = Array.from({ length: 180 }, (_, n) =>
  call({
    at: now - 4 * day + Math.floor((n * 4 * day) / 180),
    userId: `user-${n % 5}`,
    sessionId: `session-${n % 7}`,
    tags: [`tag-${n % 3}`, `tag-${(n + 1) % 4}`],
    metadata: n % 3 === 0 ? {} : { feature: `f-${n % 4}` },
    environment: ["production", "staging", "dev"][n % 3]!,
    status: n % 6 === 0 ? "error" : "success",
    latencyMs: 30 + ((n * 53) % 700),
    // Binary fractions: sums in any order are exact, so ties of cost rank the same on both stores.
    costUsd: (n % 9) / 1024,
  }),
);

const dimensions = groupDailyDimensions;

/** Every group-by of the Attribution page (top groups with latency, and by day), over whole and partial days, under filters. */
async function attribution(store: Store): Promise<unknown[]> {
  const answers: unknown[] = [];
  for (const since of [now - 30 * day, now - 2 * day - 5 * 3_600_000]) {
    for (const f of [{}, { userId: "user-1" }, { environment: "production" }]) {
      const filter = create(TraceFilterSchema, { since: timestampFromMs(since), ...f });
      for (const dimension of dimensions) {
        const top = await store.usageByGroup("acc_a", filter, dimension, 3);
        answers.push(
          top,
          await store.usageByGroupAndDay(
            "acc_a",
            filter,
            dimension,
            top.groups.map((g) => g.value),
            true,
          ),
        );
      }
      answers.push(await store.usageTotals("acc_a", filter), await store.latencyHistogram("acc_a", filter));
    }
  }
  return answers;
}

const groupRows = (dir: string) => tableRows(dir, "SELECT * FROM group_daily ORDER BY project_num, dimension, value, day, status");

describe("embedded store: group_daily keyed by day before value (D78)", () => {
  it("re-keys a store written before it: the same rows, and every group-by answers as the writer's", async () => {
    await withUpgradedStore(
      (dir) => openSqliteStore(dir, { groupValuesPerDay }),
      traces,
      // The release before: group_daily keyed by value, then status, then day.
      (dir) =>
        rollBackBefore(
          dir,
          "group_daily_by_day",
          ["runs_pending"],
          `CREATE TABLE group_daily_by_value AS SELECT * FROM group_daily;
           DROP TABLE group_daily;
           CREATE TABLE group_daily (project_num INTEGER NOT NULL, dimension TEXT NOT NULL, value TEXT NOT NULL, day INTEGER NOT NULL,
             status TEXT NOT NULL, calls INTEGER NOT NULL, cost_usd REAL NOT NULL, tokens_in INTEGER NOT NULL, tokens_out INTEGER NOT NULL,
             unpriced INTEGER NOT NULL DEFAULT 0, mismatched INTEGER NOT NULL DEFAULT 0, latency TEXT NOT NULL DEFAULT '{}',
             PRIMARY KEY (project_num, dimension, value, status, day)) WITHOUT ROWID;
           INSERT INTO group_daily SELECT * FROM group_daily_by_value;
           DROP TABLE group_daily_by_value;`,
        ),
      async ({ upgraded, upgradedDir, written, writtenDir }) => {
        const rows = groupRows(upgradedDir);
        expect(rows.some((row) => (row as { value: string }).value === "\u0000other")).toBe(true);
        expect(rows).toEqual(groupRows(writtenDir));
        const [key] = tableRows(upgradedDir, "SELECT sql FROM sqlite_master WHERE name = 'group_daily'") as { sql: string }[];
        expect(key!.sql).toContain("PRIMARY KEY (project_num, dimension, day, value, status)");
        const answers = await attribution(upgraded);
        // Groups counted under other, and tracked ones, in the answers read.
        const text = JSON.stringify(answers, (_key, v) => (typeof v === "bigint" ? Number(v) : v));
        expect(text).toContain('"other":true');
        expect(text).toContain('"value":"user-1"');
        expect(rounded(answers)).toEqual(rounded(await attribution(written)));
      },
    );
  });
});
