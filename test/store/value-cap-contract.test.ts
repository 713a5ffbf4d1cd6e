import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { StoredTraceSchema, type StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import type { GroupDimension } from "../../src/store/group-dimension.js";
import { maxGroupParts } from "../../src/store/mongo/mongo-trace-reader.js";
import { openMongoStore } from "../../src/store/mongo/mongo-store.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { maxPartTraces } from "../../src/store/sqlite/sqlite-trace-reader.js";
import type { Store } from "../../src/store/store.js";
import { TooManyGroupsError } from "../../src/store/trace-reader.js";
import { startMongoTestServer, type MongoTestServer } from "../support/ferretdb.js";
import { call } from "../support/stored-call.js";
import { tempDir } from "../support/temp-dir.js";

/**
 * The bound on distinct values per project, dimension and day (D54): the first values of a day
 * are groups of their own, the rest one "other" group, and every dimension's groups still add up
 * to the totals, over whole days (the roll-ups) and part days (the traces) alike.
 */
const limit = 3;
let mongo: MongoTestServer;
beforeAll(async () => {
  mongo = await startMongoTestServer();
});
afterAll(async () => {
  await mongo?.close();
});

/** Each adapter: a new place for a store (a directory, a database), and a store opened there, again and again. */
const adapters: [string, { place: () => string; open: (place: string) => Promise<Store> }][] = [
  ["embedded (SQLite)", { place: tempDir, open: async (dir) => openSqliteStore(dir, { groupValuesPerDay: limit }) }],
  ["MongoDB", { place: () => mongo.freshUri(), open: (uri) => openMongoStore(uri, { groupValuesPerDay: limit }) }],
];

const day = 86_400_000;
/** A call of acc_cap's key_cap, gpt-4o, a token each way, unless told otherwise. */
const capCall = (fields: Parameters<typeof call>[0]) => call({ keyId: "key_cap", accountId: "acc_cap", tokensIn: 1, tokensOut: 1, latencyMs: 100, ...fields });
const filter = (sinceMs: number, untilMs: number) => create(TraceFilterSchema, { since: timestampFromMs(sinceMs), until: timestampFromMs(untilMs) });

/** Each trace a new user, session, two new tags, a new metadata key and value, on two whole past days and part of today. */
function explodingTraces(start: number): StoredTrace[] {
  const traces: StoredTrace[] = [];
  const today = Math.floor(Date.now() / day) * day;
  for (let d = 2; d >= 0; d--) {
    for (let i = 0; i < 8; i++) {
      const n = traces.length;
      traces.push(
        capCall({
          at: d === 0 ? Math.min(today + i * 1000, Date.now() - 1000) : today - d * day + i * 60_000,
          tokensIn: 10 + n,
          latencyMs: 100 * (n + 1),
          costUsd: (n + 1) / 1000,
          status: n % 5 === 0 ? "error" : "success",
          // Every other trace has no session; the first tag repeats, so it stays tracked.
          userId: `user-${start + n}`,
          ...(n % 2 === 0 ? { sessionId: `sess-${start + n}` } : {}),
          tags: ["steady", `tag-${start + n}`, `tag-b-${start + n}`],
          metadata: { [`k${n}`]: `v${n}`, team: `team-${n}` },
          environment: "production",
        }),
      );
    }
  }
  return traces;
}

const dimensions: GroupDimension[] = [{ kind: "user" }, { kind: "session" }, { kind: "tag" }, { kind: "metadataKey" }, { kind: "metadata", key: "team" }];

describe.each(adapters)("value cap on %s", (_name, { place, open }) => {
  it("counts each day's values past the bound as one other group, and the groups still add up to the totals", async () => {
    const store = await open(place());
    const traces = explodingTraces(0);
    await store.writeBatch(traces.map((trace) => ({ trace, idempotencyKey: undefined })));
    const today = Math.floor(Date.now() / day) * day;
    // Whole past days from the roll-ups, and today from the traces; and today alone.
    for (const range of [filter(today - 2 * day, Date.now() + 1000), filter(today - 2 * day + 1, Date.now() + 1000), filter(today, Date.now() + 1000)]) {
      const totals = await store.usageTotals("acc_cap", range);
      for (const dimension of dimensions) {
        const { groups, totalGroups } = await store.usageByGroup("acc_cap", range, dimension, 1000);
        expect(groups.length, dimension.kind).toBe(totalGroups);
        const other = groups.filter((g) => g.other);
        expect(other, dimension.kind).toHaveLength(1);
        expect(other[0]!.value).toBe("");
        const named = groups.filter((g) => !g.other && g.value !== "");
        const days = range.since!.seconds < BigInt(today / 1000) ? 3 : 1;
        expect(named.length, dimension.kind).toBeLessThanOrEqual(limit * days);
        if (dimension.kind === "user" || dimension.kind === "session" || dimension.kind === "metadata") {
          // One group per trace: the groups add up to the totals exactly.
          const calls = groups.reduce((s, g) => s + g.totals!.calls, 0n);
          const cost = groups.reduce((s, g) => s + g.totals!.costUsd, 0);
          const errors = groups.reduce((s, g) => s + g.totals!.errors, 0n);
          expect(calls, dimension.kind).toBe(totals.calls);
          expect(errors, dimension.kind).toBe(totals.errors);
          expect(cost).toBeCloseTo(totals.costUsd, 9);
        }
      }
    }
    await store.close();
  });

  it("sums an environment counted under other on a past day exactly as its traces add up", async () => {
    const store = await open(place());
    const today = Math.floor(Date.now() / day) * day;
    // Past the bound on the day before yesterday: env-3 and env-4 are counted under other there, tracked yesterday.
    const traces = [2, 2, 2, 2, 2, 2, 1, 1].map((d, n) =>
      capCall({
        at: today - d * day + n * 60_000,
        country: "",
        tokensIn: 10 + n,
        latencyMs: 100 * (n + 1),
        costUsd: (n + 1) / 1000,
        status: n === 4 ? "error" : "success",
        environment: `env-${[0, 1, 2, 3, 4, 4, 4, 0][n]}`,
      }),
    );
    await store.writeBatch(traces.map((trace) => ({ trace, idempotencyKey: undefined })));
    const range = filter(today - 3 * day, today);
    for (const [environment, calls, errors, cost] of [
      ["env-4", 3n, 1n, (5 + 6 + 7) / 1000],
      ["env-3", 1n, 0n, 4 / 1000],
      ["env-0", 2n, 0n, (1 + 8) / 1000],
    ] as const) {
      const f = create(TraceFilterSchema, { ...range, environment });
      const totals = await store.usageTotals("acc_cap", f);
      expect(totals, environment).toMatchObject({ calls, errors });
      expect(totals.costUsd, environment).toBeCloseTo(cost, 9);
      const days = await store.usageByDayTotals("acc_cap", f);
      expect(days.reduce((n, d) => n + d.totals!.calls, 0n), environment).toBe(calls);
      const histogram = await store.latencyHistogram("acc_cap", f);
      expect(histogram.reduce((n, b) => n + b.calls, 0n), environment).toBe(calls);
      // The Overview's reads by model, day and model, and key (D67).
      const models = await store.usageByModel("acc_cap", f);
      expect(models.map((m) => [m.model, m.totals!.calls, m.totals!.errors]), environment).toEqual([["gpt-4o", calls, errors]]);
      const dayModels = await store.usageByDay("acc_cap", f);
      expect(dayModels.reduce((n, d) => n + d.totals!.calls, 0n), environment).toBe(calls);
      const keys = await store.usageByGroup("acc_cap", f, { kind: "key" }, 10);
      expect(keys.groups.map((g) => [g.value, g.totals!.calls]), environment).toEqual([["key_cap", calls]]);
    }
    await store.close();
  });

  it("sums a user counted under other on a past day exactly as its traces add up (D82: whole days from the user's roll-up rows)", async () => {
    const store = await open(place());
    const today = Math.floor(Date.now() / day) * day;
    // Past the bound on the day before yesterday: user-3 and user-4 are counted under other there, tracked yesterday and today.
    const traces = [2, 2, 2, 2, 2, 2, 1, 1, 1, 0].map((d, n) =>
      capCall({
        at: d === 0 ? Date.now() - 60_000 : today - d * day + n * 60_000,
        model: n % 2 === 0 ? "gpt-4o" : "gpt-4o-mini",
        tokensIn: 10 + n,
        latencyMs: 100 * (n + 1),
        costUsd: (n + 1) / 1000,
        status: n === 4 || n === 8 ? "error" : "success",
        userId: `user-${[0, 1, 2, 3, 4, 4, 4, 0, 4, 4][n]}`,
      }),
    );
    await store.writeBatch(traces.map((trace) => ({ trace, idempotencyKey: undefined })));
    const since = today - 3 * day;
    for (const [userId, status, calls, errors, cost, latencies] of [
      ["user-4", undefined, 5n, 2n, (5 + 6 + 7 + 9 + 10) / 1000, [500, 600, 700, 900, 1000]],
      ["user-4", "error", 2n, 2n, (5 + 9) / 1000, [500, 900]],
      ["user-3", undefined, 1n, 0n, 4 / 1000, [400]],
      ["user-0", undefined, 2n, 0n, (1 + 8) / 1000, [100, 800]],
      ["user-9", undefined, 0n, 0n, 0, []],
    ] as const) {
      const f = create(TraceFilterSchema, { since: timestampFromMs(since), userId, ...(status ? { status } : {}) });
      const label = `${userId} ${status ?? ""}`;
      const totals = await store.usageTotals("acc_cap", f);
      expect(totals, label).toMatchObject({ calls, errors });
      expect(totals.costUsd, label).toBeCloseTo(cost, 9);
      expect(totals.tokensIn, label).toBe(BigInt(latencies.reduce((n, ms) => n + 10 + ms / 100 - 1, 0)));
      // The latency percentiles are the bounds of the buckets their calls fall in, within 5% above.
      const p95 = latencies.length === 0 ? 0 : latencies[Math.ceil(0.95 * latencies.length) - 1]!;
      expect(totals.latencyP95Ms, label).toBeGreaterThanOrEqual(p95);
      expect(totals.latencyP95Ms, label).toBeLessThanOrEqual(p95 * 1.05);
      const days = await store.usageByDayTotals("acc_cap", f);
      expect(days.reduce((n, d) => n + d.totals!.calls, 0n), label).toBe(calls);
      expect(days.reduce((n, d) => n + d.totals!.errors, 0n), label).toBe(errors);
      const histogram = await store.latencyHistogram("acc_cap", f);
      expect(histogram.reduce((n, b) => n + b.calls, 0n), label).toBe(calls);
      // The reads the user's index answers (D82): by model, by day and model, by key.
      const models = await store.usageByModel("acc_cap", f);
      expect(models.reduce((n, m) => n + m.totals!.calls, 0n), label).toBe(calls);
      const dayModels = await store.usageByDay("acc_cap", f);
      expect(dayModels.reduce((n, d) => n + d.totals!.errors, 0n), label).toBe(errors);
      const keys = await store.usageByGroup("acc_cap", f, { kind: "key" }, 10);
      expect(keys.groups.map((g) => [g.value, g.totals!.calls]), label).toEqual(calls === 0n ? [] : [["key_cap", calls]]);
      // The one key's latency is the user's (read with its sums on the embedded store, D82).
      expect(keys.groups.map((g) => [g.totals!.latencyP50Ms, g.totals!.latencyP95Ms]), label).toEqual(
        calls === 0n ? [] : [[totals.latencyP50Ms, totals.latencyP95Ms]],
      );
      expect(totals.latencyP50Ms > 0, label).toBe(calls > 0n);
    }
    await store.close();
  });

  it("tracks the first values of a day, keeps a steady value, and answers the other group by day on request", async () => {
    const store = await open(place());
    const traces = explodingTraces(100);
    await store.writeBatch(traces.map((trace) => ({ trace, idempotencyKey: undefined })));
    const today = Math.floor(Date.now() / day) * day;
    const range = filter(today - 2 * day, today);
    const users = await store.usageByGroup("acc_cap", range, { kind: "user" }, 1000);
    // The first three users of each of the two days, and the other ten.
    expect(users.groups.filter((g) => !g.other).map((g) => g.value).sort()).toEqual(
      ["user-100", "user-101", "user-102", "user-108", "user-109", "user-110"].sort(),
    );
    expect(users.groups.find((g) => g.other)!.totals!.calls).toBe(10n);
    const tags = await store.usageByGroup("acc_cap", range, { kind: "tag" }, 1000);
    expect(tags.groups.find((g) => g.value === "steady")!.totals!.calls).toBe(16n);
    // The first trace of a day fills the bound with its three tags; every later one counts once
    // in other, whichever number of its tags are past the bound.
    expect(tags.groups.filter((g) => !g.other)).toHaveLength(1 + 2 * 2);
    expect(tags.groups.find((g) => g.other)!.totals!.calls).toBe(14n);
    // A metadata key past the bound keeps none of its values: no dimension per key.
    const late = await store.usageByGroup("acc_cap", range, { kind: "metadata", key: "k7" }, 1000);
    expect(late.groups.map((g) => [g.value, g.totals!.calls])).toEqual([["", 16n]]);
    const byDay = await store.usageByGroupAndDay("acc_cap", range, { kind: "user" }, ["user-100"], true);
    expect(byDay.map((d) => [d.day, d.value, d.other, d.calls])).toEqual([
      [new Date(today - 2 * day).toISOString().slice(0, 10), "user-100", false, 1n],
      [new Date(today - 2 * day).toISOString().slice(0, 10), "", true, 5n],
      [new Date(today - day).toISOString().slice(0, 10), "", true, 5n],
    ]);
    await store.close();
  });

  it("seeds the tracked values from the store after a restart", async () => {
    const at = place();
    const first = await open(at);
    const traces = explodingTraces(200);
    await first.writeBatch(traces.slice(0, 2).map((trace) => ({ trace, idempotencyKey: undefined })));
    await first.close();
    const again = await open(at);
    await again.writeBatch(traces.slice(2, 8).map((trace) => ({ trace, idempotencyKey: undefined })));
    const today = Math.floor(Date.now() / day) * day;
    const users = await again.usageByGroup("acc_cap", filter(today - 2 * day, today - day), { kind: "user" }, 1000);
    expect(users.groups.filter((g) => !g.other).map((g) => g.value).sort()).toEqual(["user-200", "user-201", "user-202"]);
    expect(users.groups.find((g) => g.other)!.totals!.calls).toBe(5n);
    await again.close();
  });
});

/** The embedded store reads whole days from its roll-ups and part days from the traces. */
describe("value cap on the embedded store's roll-ups", () => {
  const open = async () => openSqliteStore(tempDir(), { groupValuesPerDay: limit });

  it("counts the part of a day with too many traces to group in time as its whole day, and says so", { timeout: 180_000 }, async () => {
    const store = await open();
    const yesterday = Math.floor(Date.now() / day) * day - day;
    const morning = [0, 1, 2].map((i) => ({ at: yesterday + 3_600_000 + i, user: "early" }));
    const afternoon = Array.from({ length: maxPartTraces.single + 1 }, (_, i) => ({ at: yesterday + day / 2 + i, user: `user-${i % 50}` }));
    const all = [...morning, ...afternoon];
    for (let start = 0; start < all.length; start += 1000) {
      await store.writeBatch(
        all.slice(start, start + 1000).map(({ at, user }) => ({
          trace: capCall({
            at: at,
            userId: user,
          }),
          idempotencyKey: undefined,
        })),
      );
    }
    const wide = await store.usageByGroup("acc_cap", filter(yesterday + day / 2, yesterday + day), { kind: "user" }, 1000);
    expect(wide.wholeDays).toBe(true);
    expect(wide.groups.find((g) => g.value === "early")!.totals!.calls).toBe(3n);
    expect(wide.groups.reduce((s, g) => s + g.totals!.calls, 0n)).toBe(BigInt(all.length));
    // A part with few traces is still read exactly.
    const exact = await store.usageByGroup("acc_cap", filter(yesterday + 1000, yesterday + day / 2), { kind: "user" }, 1000);
    expect(exact.wholeDays).toBe(false);
    expect(exact.groups.map((g) => [g.value, g.totals!.calls])).toEqual([["early", 3n]]);
    await store.close();
  });

  it("answers a group-by of 200,000 distinct users without a bound (more rows than a call's arguments can hold)", { timeout: 300_000 }, async () => {
    const store = openSqliteStore(tempDir(), { groupValuesPerDay: 0 });
    const yesterday = Math.floor(Date.now() / day) * day - day;
    const users = 200_000;
    for (let start = 0; start < users; start += 5000) {
      await store.writeBatch(
        Array.from({ length: 5000 }, (_, i) => ({
          trace: create(StoredTraceSchema, {
            receivedAt: timestampFromMs(yesterday + start + i),
            keyId: "key_cap",
            accountId: "acc_cap",
            country: "DE",
            provider: "openai",
            model: "gpt-4o",
            tokensIn: 1,
            tokensOut: 1,
            latencyMs: 100,
            costUsd: (start + i) / 1e6,
            status: "success",
            userId: `user-${start + i}`,
          }),
          idempotencyKey: undefined,
        })),
      );
    }
    const answer = await store.usageByGroup("acc_cap", filter(yesterday, yesterday + day), { kind: "user" }, 10);
    expect(answer.totalGroups).toBe(users);
    expect(answer.groups[0]!.value).toBe(`user-${users - 1}`);
    await store.close();
  });
});

/**
 * MongoDB keeps no roll-ups, and groups tags and metadata values with a query per value: past
 * maxGroupParts values it refuses with a clear TooManyGroupsError (RESOURCE_EXHAUSTED in
 * QueryService) rather than running thousands of queries into a 500.
 */
describe("MongoDB: a group-by over too many tags", () => {
  it("refuses with TooManyGroupsError naming the count and what to do, and still answers a narrower range", { timeout: 180_000 }, async () => {
    const store = await openMongoStore(mongo.freshUri());
    const yesterday = Math.floor(Date.now() / day) * day - day;
    const traces = Array.from({ length: maxGroupParts + 1 }, (_, i) =>
      capCall({
        at: yesterday + i * 60_000,
        tags: [`tag-${i}`],
      }),
    );
    await store.writeBatch(traces.map((trace) => ({ trace, idempotencyKey: undefined })));
    const all = filter(yesterday, yesterday + day);
    await expect(store.usageByGroup("acc_cap", all, { kind: "tag" }, 10)).rejects.toThrow(TooManyGroupsError);
    await expect(store.usageByGroup("acc_cap", all, { kind: "tag" }, 10)).rejects.toThrow(
      /^1,001 distinct values of tag in this range: MongoDB groups at most 1,000 .*narrow the time range or add a filter$/,
    );
    const narrow = await store.usageByGroup("acc_cap", filter(yesterday, yesterday + 10 * 60_000), { kind: "tag" }, 100);
    expect(narrow.totalGroups).toBe(10);
    await store.close();
  });
});

/** Several service instances on one MongoDB share a day's tracked values (D54): the bound holds exactly, not per instance. */
describe("MongoDB: the bound across service instances", () => {
  it("tracks exactly the bound's values of a day when two instances write new values at once", { timeout: 180_000 }, async () => {
    const uri = mongo.freshUri();
    const bound = 20;
    const instances = await Promise.all([0, 1].map(() => openMongoStore(uri, { groupValuesPerDay: bound })));
    const yesterday = Math.floor(Date.now() / day) * day - day;
    const batch = (store: Store, from: number) =>
      store.writeBatch(
        Array.from({ length: 10 }, (_, i) => ({
          trace: capCall({
            at: yesterday + (from + i) * 1000,
            userId: `user-${from + i}`,
            tags: [`tag-${from + i}`],
          }),
          idempotencyKey: undefined,
        })),
      );
    // Ten batches of ten new users and tags, the two instances' batches racing.
    await Promise.all([0, 1, 2, 3, 4].flatMap((k) => instances.map((store, n) => batch(store, k * 20 + n * 10))));
    for (const store of instances) {
      for (const kind of ["user", "tag"] as const) {
        const { groups } = await store.usageByGroup("acc_cap", filter(yesterday, yesterday + day), { kind }, 1000);
        expect(groups.filter((g) => !g.other), kind).toHaveLength(bound);
        expect(groups.find((g) => g.other)!.totals!.calls, kind).toBe(80n);
        expect(groups.reduce((s, g) => s + g.totals!.calls, 0n), kind).toBe(100n);
      }
    }
    for (const store of instances) await store.close();
  });
});
