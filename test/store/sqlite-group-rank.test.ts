import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { beforeAll, describe, expect, it } from "vitest";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import type { GroupDimension } from "../../src/store/group-dimension.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { groupDailyDimensions, storeAll } from "../support/rollup-checks.js";
import { call } from "../support/stored-call.js";
import { tempDir } from "../support/temp-dir.js";

/**
 * An attribution group-by's top groups ranked in SQL (GROUP_RANK_IN_SQL, D80) answer what every
 * group's sums ranked in JavaScript do: over whole and partial days, with values counted as other
 * (D54), ties at the cut, traces without a metadata key, and filters that read the traces.
 */
const day = 86_400_000;
const hour = 3_600_000;
const now = Date.now();
/** Three values a day tracked: the rest count as other. */
const groupValuesPerDay = 3;
/** A range start inside a UTC day (but for a run at the very minute of midnight): its first day is partial. */
const partStart = now - 3 * day - 5 * hour;

const traces = [
  // Values seen only in the partial first day of a range from partStart, dearer than any whole day's; written first, so tracked (D54).
  ...["late-1", "late-2"].map((value, n) =>
    call({
      at: partStart + 60_000 + n,
      userId: value,
      sessionId: value,
      tags: [value],
      metadata: { feature: value },
      costUsd: 0.5 * (n + 1),
    }),
  ),
  // A value whose partial first day and a whole day make it dearer than late-1, neither alone (D82); written early, so tracked on both.
  ...[partStart + 120_000, now - 2 * day].map((at) =>
    call({ at, userId: "both", sessionId: "both", tags: ["both"], metadata: { feature: "both" }, costUsd: 0.3 }),
  ),
  ...Array.from({ length: 240 }, (_, n) =>
    call({
      at: now - 6 * day + Math.floor((n * 6 * day) / 240),
      userId: n % 11 === 0 ? "" : `user-${n % 6}`,
      sessionId: `session-${n % 9}`,
      tags: [`tag-${n % 3}`, `tag-${(n + 1) % 5}`],
      metadata: n % 3 === 0 ? {} : { feature: `f-${n % 4}` },
      environment: ["production", "staging", "dev"][n % 3]!,
      keyId: ["key_a", "key_b", "key_c"][n % 3]!,
      provider: ["openai", "anthropic"][n % 2]!,
      model: ["gpt-4o", "o3", "claude-sonnet-4"][n % 3]!,
      status: n % 6 === 0 ? "error" : "success",
      latencyMs: 30 + ((n * 53) % 700),
      // Binary fractions: sums in any order are exact, so ties of cost rank the same on both paths.
      costUsd: (n % 9) / 1024,
    }),
  ),
  // Ties on a whole day: three users, sessions and tags of the same cost, first of their day so tracked.
  ...["tie-c", "tie-a", "tie-b"].map((value, n) =>
    call({ at: now - 10 * day + n, userId: value, sessionId: value, tags: [value], metadata: { feature: value }, costUsd: 0.02 }),
  ),
];

const dimensions: GroupDimension[] = [...groupDailyDimensions, { kind: "key" }, { kind: "provider" }, { kind: "model" }];

/** Every top-groups read of the Attribution page, over ranges with whole and partial days, under filters, at several limits. */
async function topGroups(store: Store): Promise<unknown[]> {
  const answers: unknown[] = [];
  for (const since of [now - 30 * day, partStart, now - 5 * hour]) {
    for (const f of [{}, { userId: "user-1" }, { environment: "production" }, { status: "error" }, { keyId: "key_b" }]) {
      const filter = create(TraceFilterSchema, { since: timestampFromMs(since), ...f });
      for (const dimension of dimensions) {
        for (const limit of [1, 2, 3, 50])
          answers.push({ since, f, dimension, limit, top: await store.usageByGroup("acc_a", filter, dimension, limit) });
      }
    }
  }
  return answers;
}

describe("embedded store: a group-by's top groups ranked in SQL (D80)", () => {
  const dir = tempDir();
  beforeAll(async () => {
    const store = openSqliteStore(dir, { groupValuesPerDay });
    await storeAll(store, traces);
    await store.close();
  });

  it("answers every group-by as ranking every group in JavaScript does", async () => {
    const off = openSqliteStore(dir, { groupValuesPerDay, groupRankInSql: false });
    const inJs = await topGroups(off);
    await off.close();
    const on = openSqliteStore(dir, { groupValuesPerDay });
    const inSql = await topGroups(on);
    await on.close();
    const text = JSON.stringify(inJs, (_key, v) => (typeof v === "bigint" ? Number(v) : v));
    // The cases the ranking must get right are in the answers: other, the group without a value, ties, partial-day values on top.
    expect(text).toContain('"other":true');
    const groups = inJs.flatMap((a) => (a as { top: { groups: { value: string; other: boolean }[] } }).top.groups);
    expect(groups.some((g) => g.value === "" && !g.other)).toBe(true);
    expect(text).toContain('"value":"tie-a"');
    expect(text).toContain('"value":"late-2"');
    expect(inSql).toEqual(inJs);
  });

  it("ranks tied values by value at the cut, counts every group, and ranks a partial day's value first", async () => {
    const store = openSqliteStore(dir, { groupValuesPerDay });
    try {
      const filter = create(TraceFilterSchema, { since: timestampFromMs(now - 11 * day), until: timestampFromMs(now - 9 * day) });
      const top = await store.usageByGroup("acc_a", filter, { kind: "session" }, 2);
      expect(top.groups.map((g) => g.value)).toEqual(["tie-a", "tie-b"]);
      expect(top.totalGroups).toBe(3);
      const late = await store.usageByGroup("acc_a", create(TraceFilterSchema, { since: timestampFromMs(partStart) }), { kind: "user" }, 1);
      expect(late.groups.map((g) => g.value)).toEqual(["late-2"]);
    } finally {
      await store.close();
    }
  });

  it("answers as JavaScript does when the partial days hold more values than are read by seeks", async () => {
    // No bound on values: 1,500 users in the partial first day, more than the candidates read a seek per value and day.
    const wide = tempDir();
    const many = [
      ...Array.from({ length: 1_500 }, (_, n) => call({ at: partStart + 1_000 + n, userId: `part-${n}`, costUsd: (n % 13) / 1024 })),
      ...Array.from({ length: 300 }, (_, n) => call({ at: now - 2 * day + n * 60_000, userId: `whole-${n % 40}`, costUsd: (n % 7) / 128 })),
    ];
    const seeded = openSqliteStore(wide, { groupValuesPerDay: 0 });
    await storeAll(seeded, many);
    await seeded.close();
    const read = async (groupRankInSql: boolean) => {
      const store = openSqliteStore(wide, { groupValuesPerDay: 0, groupRankInSql });
      try {
        const filter = create(TraceFilterSchema, { since: timestampFromMs(partStart) });
        return await Promise.all([1, 10, 50].map((limit) => store.usageByGroup("acc_a", filter, { kind: "user" }, limit)));
      } finally {
        await store.close();
      }
    };
    const inJs = await read(false);
    expect(inJs[2]!.totalGroups).toBe(1_540);
    expect(await read(true)).toEqual(inJs);
  });
});
