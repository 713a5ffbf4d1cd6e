import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, toJsonString } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { TraceFilterSchema, type TraceFilter } from "../../gen/calltrace/v1/query_pb.js";
import { PriceCheck, StoredTraceSchema, type StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import type { GroupDimension } from "../../src/store/group-dimension.js";
import { histogramBoundsMs } from "../../src/store/latency-bucket.js";
import { openMongoStore } from "../../src/store/mongo/mongo-store.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { InvalidCursorError, type TraceSort } from "../../src/store/trace-cursor.js";
import { startMongoTestServer, type MongoTestServer } from "../support/ferretdb.js";
import { expectDayTotals, expectedTotals } from "../support/expected-usage.js";
import { tempDir } from "../support/temp-dir.js";

/**
 * The attribution reads (group-by any dimension, filters on every attribute, sorted pages, one
 * trace by id), the same tests against every store adapter, checked against answers worked out
 * the slow way from the traces written.
 */
let mongo: MongoTestServer;
beforeAll(async () => {
  mongo = await startMongoTestServer();
});
afterAll(async () => {
  await mongo?.close();
});

const adapters: [string, () => Promise<Store>][] = [
  ["embedded (SQLite)", async () => openSqliteStore(tempDir())],
  ["MongoDB", () => openMongoStore(mongo.freshUri())],
];

const hour = 3_600_000;
const day = 24 * hour;
const filter = (init: Parameters<typeof create<typeof TraceFilterSchema>>[1] = {}) => create(TraceFilterSchema, init);

/** Three days of traces of two accounts with every attribute varied, some left out. */
function dataset(): StoredTrace[] {
  const today = Math.floor(Date.now() / day) * day;
  const traces: StoredTrace[] = [];
  let seed = 11;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
  const models = [
    ["openai", "gpt-4o"],
    ["openai", "GPT-4o-mini"],
    ["anthropic", "claude-sonnet-4"],
    ["gemini", "gemini-2.5-flash"],
  ] as const;
  for (let i = 0; i < 240; i++) {
    const [provider, model] = pick(models);
    const failed = random() < 0.15;
    const tags = pick([[], ["checkout"], ["search"], ["checkout", "search"], ["search", "search"], ["beta", "checkout"]]);
    const metadata: Record<string, string> = {};
    if (random() < 0.7) metadata.feature = pick(["summary", "chat", "100%_off"]);
    if (random() < 0.3) metadata.team = pick(["payments", "growth"]);
    if (random() < 0.2) metadata.service = pick(["billing-api", "web"]);
    const otlp = random() < 0.25;
    traces.push(
      create(StoredTraceSchema, {
        receivedAt: timestampFromMs(today - 2 * day + Math.floor(random() * (2 * day + Math.min(Date.now() - today, 6 * hour)))),
        keyId: pick(["key_x", "key_y"]),
        accountId: i % 6 === 0 ? "acc_attr_other" : "acc_attr",
        country: "DE",
        provider,
        model,
        tokensIn: Math.floor(random() * 2000),
        tokensOut: Math.floor(random() * 500),
        // Equal values on purpose: sorted pages must break ties by id.
        latencyMs: Math.floor(random() * 40) * 50,
        costUsd: Math.floor(random() * 30) / 1e4,
        status: failed ? "error" : "success",
        priceCheck: pick([PriceCheck.MATCH, PriceCheck.MATCH, PriceCheck.UNPRICED, PriceCheck.MISMATCH]),
        ...(failed ? { error: pick(["Rate limit exceeded (429)", "upstream overloaded", "context length exceeded"]) } : {}),
        ...(random() < 0.8 ? { userId: `user-${Math.floor(random() * 12)}` } : {}),
        ...(random() < 0.6 ? { sessionId: `sess-${Math.floor(random() * 20)}` } : {}),
        ...(random() < 0.7 ? { environment: pick(["production", "staging"]) } : {}),
        tags,
        metadata,
        ...(otlp
          ? { serviceName: pick(["agent", "billing-api"]), otlpTraceId: pick(["a".repeat(32), "b".repeat(32)]), otlpSpanId: "1".repeat(16) }
          : {}),
      }),
    );
  }
  return traces;
}

const at = (t: StoredTrace) => timestampMs(t.receivedAt!);

/** The groups a trace counts in, worked out from the trace itself. */
function valuesOf(t: StoredTrace, d: GroupDimension): string[] {
  switch (d.kind) {
    case "user":
      return [t.userId ?? ""];
    case "session":
      return [t.sessionId ?? ""];
    case "environment":
      return [t.environment ?? ""];
    case "service":
      return [t.serviceName || t.metadata.service || ""];
    case "key":
      return [t.keyId];
    case "provider":
      return [t.provider];
    case "model":
      return [t.model];
    case "tag":
      return t.tags.length === 0 ? [""] : [...new Set(t.tags)];
    case "metadataKey":
      return Object.keys(t.metadata).length === 0 ? [""] : Object.keys(t.metadata);
    case "metadata":
      return [t.metadata[d.key] ?? ""];
  }
}

function matches(t: StoredTrace, f: TraceFilter): boolean {
  const contains = (text: string | undefined, part: string) => (text ?? "").toLowerCase().includes(part.toLowerCase());
  return (
    (!f.since || at(t) >= timestampMs(f.since)) &&
    (!f.until || at(t) < timestampMs(f.until)) &&
    (!f.keyId || t.keyId === f.keyId) &&
    (!f.provider || t.provider === f.provider) &&
    (!f.model || t.model === f.model) &&
    (!f.status || t.status === f.status) &&
    (!f.userId || t.userId === f.userId) &&
    (!f.sessionId || t.sessionId === f.sessionId) &&
    f.tags.every((tag) => t.tags.includes(tag)) &&
    Object.entries(f.metadata).every(([k, v]) => t.metadata[k] === v) &&
    (!f.environment || t.environment === f.environment) &&
    (!f.service || valuesOf(t, { kind: "service" })[0] === f.service) &&
    (!f.modelContains || contains(t.model, f.modelContains)) &&
    (!f.errorContains || contains(t.error, f.errorContains)) &&
    (!f.otlpTraceId || t.otlpTraceId === f.otlpTraceId)
  );
}

const dimensions: GroupDimension[] = [
  { kind: "user" },
  { kind: "session" },
  { kind: "tag" },
  { kind: "metadata", key: "feature" },
  { kind: "metadata", key: "team" },
  { kind: "metadataKey" },
  { kind: "environment" },
  { kind: "key" },
  { kind: "provider" },
  { kind: "model" },
  { kind: "service" },
];

/** Drops the id, which each store assigns its own way. */
const content = (t: StoredTrace) => toJsonString(StoredTraceSchema, { ...t, id: "" });

// FerretDB answers each sum of a $group with a scan of its own: the MongoDB runs take a while.
describe.each(adapters)("attribution contract: %s", { timeout: 300_000 }, (_name, open) => {
  let store: Store;
  const traces = dataset();
  const mine = traces.filter((t) => t.accountId === "acc_attr");
  const today = Math.floor(Date.now() / day) * day;
  const ranges: TraceFilter[] = [
    filter(),
    filter({ since: timestampFromMs(today - 2 * day + 5 * hour), until: timestampFromMs(today - 7 * hour) }),
    filter({ status: "success", since: timestampFromMs(today - 2 * day + 5 * hour) }),
    filter({ tags: ["checkout"], since: timestampFromMs(today - day - 2 * hour) }),
    filter({ provider: "openai", until: timestampFromMs(today) }),
    filter({ modelContains: "gpt-4O", since: timestampFromMs(today - day - 2 * hour) }),
  ];

  beforeAll(async () => {
    store = await open();
    for (let i = 0; i < traces.length; i += 60)
      await store.writeBatch(traces.slice(i, i + 60).map((trace) => ({ trace, idempotencyKey: undefined })));
  });
  afterAll(async () => {
    await store?.close();
  });

  /** The store's groups of `dimension` under `f` against the traces' own, each group's totals exact, dearest first. */
  async function expectGroups(f: TraceFilter, dimension: GroupDimension): Promise<void> {
    const label = `${JSON.stringify(dimension)} ${toJsonString(TraceFilterSchema, f)}`;
    const expected = new Map<string, StoredTrace[]>();
    for (const t of mine.filter((t) => matches(t, f))) for (const v of valuesOf(t, dimension)) expected.set(v, [...(expected.get(v) ?? []), t]);
    const { groups, totalGroups } = await store.usageByGroup("acc_attr", f, dimension, 1000);
    expect(totalGroups, label).toBe(expected.size);
    expect(groups.map((g) => g.value).sort(), label).toEqual([...expected.keys()].sort());
    for (const g of groups) {
      const { costUsd, ...exact } = expectedTotals(expected.get(g.value)!);
      expect(g.totals, `${label} ${g.value}`).toMatchObject(exact);
      expect(g.totals!.costUsd, `${label} ${g.value}`).toBeCloseTo(costUsd, 9);
    }
    const costs = groups.map((g) => g.totals!.costUsd);
    expect(
      [...costs].sort((a, b) => b - a),
      label,
    ).toEqual(costs);
  }

  it("groups usage by every dimension as the traces add up, over whole and partial days and under filters", async () => {
    for (const f of ranges) for (const dimension of dimensions) await expectGroups(f, dimension);
  });

  it("sums an environment's usage, days, models, keys, providers and latency exactly as its traces add up, alone or with other filters", async () => {
    for (const f of [
      filter({ environment: "production" }),
      filter({ environment: "staging", since: timestampFromMs(today - day - 5 * hour), until: timestampFromMs(today - 3 * hour) }),
      filter({ environment: "production", status: "error", since: timestampFromMs(today - 2 * day + 7 * hour) }),
      filter({ environment: "staging", keyId: "key_x", provider: "openai" }),
      filter({ environment: "production", modelContains: "gpt-4O", until: timestampFromMs(today) }),
      filter({ environment: "production", model: "claude-sonnet-4" }),
      filter({ environment: "no-such-environment" }),
    ]) {
      const chosen = mine.filter((t) => matches(t, f));
      const label = toJsonString(TraceFilterSchema, f);
      const { costUsd, ...exact } = expectedTotals(chosen);
      const totals = await store.usageTotals("acc_attr", f);
      expect(totals, label).toMatchObject(exact);
      expect(totals.costUsd, label).toBeCloseTo(costUsd, 9);
      const dayOf = (t: StoredTrace) => new Date(at(t)).toISOString().slice(0, 10);
      expectDayTotals(await store.usageByDayTotals("acc_attr", f), chosen, dayOf, label);
      const histogram = await store.latencyHistogram("acc_attr", f);
      const expectedCounts = [...histogramBoundsMs, Infinity].map(
        (upper, i) => chosen.filter((t) => t.latencyMs <= upper && (i === 0 || t.latencyMs > histogramBoundsMs[i - 1]!)).length,
      );
      expect(
        histogram.map((b) => Number(b.calls)),
        label,
      ).toEqual(expectedCounts);
      // The Overview's reads by model, by day and model, and by key and provider (D67).
      const models = await store.usageByModel("acc_attr", f);
      const modelOf = (t: StoredTrace) => `${t.provider} ${t.model}`;
      expect(models.map((m) => `${m.provider} ${m.model}`).sort(), label).toEqual([...new Set(chosen.map(modelOf))].sort());
      for (const m of models) {
        const { costUsd: cost, ...rest } = expectedTotals(chosen.filter((t) => modelOf(t) === `${m.provider} ${m.model}`));
        expect(m.totals, `${label} ${m.model}`).toMatchObject(rest);
        expect(m.totals!.costUsd, `${label} ${m.model}`).toBeCloseTo(cost, 9);
      }
      const byDay = await store.usageByDay("acc_attr", f);
      const dayModelOf = (t: StoredTrace) => `${dayOf(t)} ${modelOf(t)}`;
      expect(byDay.map((d) => `${d.day} ${d.provider} ${d.model}`).sort(), label).toEqual([...new Set(chosen.map(dayModelOf))].sort());
      for (const d of byDay) {
        const { costUsd: cost, ...rest } = expectedTotals(chosen.filter((t) => dayModelOf(t) === `${d.day} ${d.provider} ${d.model}`));
        expect(d.totals, `${label} ${d.day} ${d.model}`).toMatchObject(rest);
        expect(d.totals!.costUsd, `${label} ${d.day} ${d.model}`).toBeCloseTo(cost, 9);
      }
      for (const kind of ["key", "provider", "model"] as const) await expectGroups(f, { kind });
    }
  });

  it("groups a user's calls by tag, metadata key and metadata value (traces without any under ''), over whole and partial days and with a status", async () => {
    const users = [...new Set(mine.map((t) => t.userId).filter((u) => u !== undefined))].slice(0, 4);
    expect(users.length).toBe(4);
    for (const userId of users) {
      for (const f of [
        filter({ userId }),
        filter({ userId, since: timestampFromMs(today - day - 5 * hour) }),
        filter({ userId, status: "error" }),
      ]) {
        for (const d of [{ kind: "tag" }, { kind: "metadataKey" }, { kind: "metadata", key: "feature" }] as const) await expectGroups(f, d);
      }
    }
  });

  it("answers the top groups only, with the count of all of them", async () => {
    const { groups, totalGroups } = await store.usageByGroup("acc_attr", filter(), { kind: "user" }, 3);
    const all = await store.usageByGroup("acc_attr", filter(), { kind: "user" }, 1000);
    expect(totalGroups).toBe(all.groups.length);
    expect(groups).toEqual(all.groups.slice(0, 3));
  });

  it("answers calls and spend per day for the groups asked for", async () => {
    const f = filter({ since: timestampFromMs(today - day - 5 * hour) });
    for (const [dimension, values] of [
      [{ kind: "user" }, ["user-1", "user-2", ""]],
      [{ kind: "tag" }, ["search", ""]],
      [{ kind: "metadata", key: "feature" }, ["chat", ""]],
      [{ kind: "service" }, ["billing-api"]],
    ] as [GroupDimension, string[]][]) {
      const days = await store.usageByGroupAndDay("acc_attr", f, dimension, values);
      const expected = new Map<string, { calls: number; cost: number }>();
      for (const t of mine.filter((t) => matches(t, f))) {
        for (const v of valuesOf(t, dimension).filter((v) => values.includes(v))) {
          const key = `${new Date(at(t)).toISOString().slice(0, 10)} ${v}`;
          const sums = expected.get(key) ?? { calls: 0, cost: 0 };
          expected.set(key, { calls: sums.calls + 1, cost: sums.cost + t.costUsd });
        }
      }
      expect(
        days.map((d) => `${d.day} ${d.value}`),
        JSON.stringify(dimension),
      ).toEqual([...expected.keys()].sort());
      for (const d of days) {
        expect(Number(d.calls)).toBe(expected.get(`${d.day} ${d.value}`)!.calls);
        expect(d.costUsd).toBeCloseTo(expected.get(`${d.day} ${d.value}`)!.cost, 9);
      }
    }
  });

  it("filters pages by user, session, tags, metadata, environment, service, OTLP trace, model and error text", async () => {
    const cases: TraceFilter[] = [
      filter({ userId: "user-4" }),
      filter({ sessionId: "sess-7" }),
      filter({ tags: ["search"] }),
      filter({ tags: ["checkout", "beta"] }),
      filter({ metadata: { feature: "chat" } }),
      filter({ metadata: { feature: "summary", team: "growth" } }),
      filter({ environment: "staging" }),
      filter({ service: "billing-api" }),
      filter({ service: "web" }),
      filter({ otlpTraceId: "a".repeat(32) }),
      filter({ modelContains: "gpt-4O" }),
      filter({ modelContains: "%" }),
      filter({ errorContains: "RATE LIMIT" }),
      filter({ metadata: { feature: "100%_off" } }),
      filter({ userId: "user-4", status: "error", tags: ["checkout"] }),
    ];
    for (const f of cases) {
      const page = await store.listTraces("acc_attr", f, { pageSize: 500 });
      const expected = mine.filter((t) => matches(t, f)).sort((a, b) => at(b) - at(a));
      const label = toJsonString(TraceFilterSchema, f);
      expect(page.traces.length, label).toBe(expected.length);
      expect(new Set(page.traces.map(content)), label).toEqual(new Set(expected.map(content)));
      // The same filter on the aggregates.
      expect(Number((await store.usageTotals("acc_attr", f)).calls), label).toBe(expected.length);
    }
    expect((await store.listTraces("acc_attr", filter({ modelContains: "no-such-model" }), { pageSize: 10 })).traces).toEqual([]);
  });

  it("sorts pages by time, cost, latency or tokens either way, with cursors that never repeat or skip a trace", async () => {
    const sortValue = {
      time: at,
      cost: (t: StoredTrace) => t.costUsd,
      latency: (t: StoredTrace) => t.latencyMs,
      tokens: (t: StoredTrace) => t.tokensIn + t.tokensOut,
    };
    const f = filter({ since: timestampFromMs(today - day - 3 * hour) });
    const expected = mine.filter((t) => matches(t, f));
    for (const order of ["time", "cost", "latency", "tokens"] as const) {
      for (const ascending of [false, true]) {
        const sort: TraceSort = { order, ascending };
        const seen: StoredTrace[] = [];
        let cursor: string | undefined;
        do {
          const page = await store.listTraces("acc_attr", f, { pageSize: 7, sort, ...(cursor ? { cursor } : {}) });
          seen.push(...page.traces);
          cursor = page.nextCursor || undefined;
        } while (cursor && seen.length <= expected.length);
        const label = `${order} ${ascending ? "ascending" : "descending"}`;
        expect(new Set(seen.map((t) => t.id)).size, label).toBe(expected.length);
        const values = seen.map(sortValue[order]);
        expect(values, label).toEqual([...values].sort((a, b) => (ascending ? a - b : b - a)));
        expect(values, label).toEqual(expected.map(sortValue[order]).sort((a, b) => (ascending ? a - b : b - a)));
      }
    }
    // A cursor belongs to its order: another order refuses it.
    const first = await store.listTraces("acc_attr", f, { pageSize: 3, sort: { order: "cost", ascending: false } });
    await expect(
      store.listTraces("acc_attr", f, { pageSize: 3, cursor: first.nextCursor, sort: { order: "latency", ascending: false } }),
    ).rejects.toBeInstanceOf(InvalidCursorError);
  });

  it("reads one trace by id with every field, and never another account's", async () => {
    const [newest] = (await store.listTraces("acc_attr", filter({ otlpTraceId: "b".repeat(32) }), { pageSize: 1 })).traces;
    expect(newest).toBeDefined();
    const got = await store.getTrace("acc_attr", newest!.id);
    expect(got).toEqual(newest);
    expect(got!.otlpTraceId).toBe("b".repeat(32));
    expect(await store.getTrace("acc_attr_other", newest!.id)).toBeUndefined();
    expect(await store.getTrace("acc_attr", "not an id")).toBeUndefined();
    const [theirs] = (await store.listTraces("acc_attr_other", filter(), { pageSize: 1 })).traces;
    expect(await store.getTrace("acc_attr", theirs!.id)).toBeUndefined();
  });

  it("keeps each account's groups to itself", async () => {
    const theirs = traces.filter((t) => t.accountId === "acc_attr_other");
    const users = await store.usageByGroup("acc_attr_other", filter(), { kind: "user" }, 1000);
    expect(users.groups.reduce((sum, g) => sum + Number(g.totals!.calls), 0)).toBe(theirs.length);
    expect((await store.usageByGroup("acc_nobody", filter(), { kind: "tag" }, 1000)).groups).toEqual([]);
  });
});
