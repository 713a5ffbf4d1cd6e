import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { afterEach, describe, expect, it } from "vitest";
import { PriceCheck, StoredTraceSchema, type StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import { bucketPercentile, latencyBucket } from "../../src/store/latency-bucket.js";
import { keepMinuteMs, minuteMs, quarterMs } from "../../src/store/scope-counters.js";
import { callScopeKeys } from "../../src/store/scope-keys.js";
import type { Store } from "../../src/store/store.js";
import { storeAdapters } from "../support/store-adapters.js";
import { seededRandom } from "../support/seeded-random.js";

/** The alert scopes' counters (src/store/scope-counters.ts), one contract for every store adapter. */
const adapters = storeAdapters();

const project = "acc_scopes";
const hour = 3_600_000;

/** A varied call: its key, model, user, environment, tags and metadata drawn from small sets, so scopes overlap. */
function call(random: () => number, at: number, accountId = project): StoredTrace {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const tags = [...new Set([pick(["a", "b", "c"]), pick(["a", "b", "c", ""])])].filter((t) => t !== "");
  const user = pick(["u1", "u2", undefined]);
  const environment = pick(["production", "staging", undefined]);
  const status = random() < 0.2 ? "error" : "success";
  return create(StoredTraceSchema, {
    receivedAt: timestampFromMs(at),
    keyId: pick(["key_1", "key_2"]),
    accountId,
    country: "DE",
    provider: "openai",
    model: pick(["gpt-4o", "gpt-4o-mini"]),
    tokensIn: 10,
    tokensOut: 5,
    latencyMs: Math.floor(random() * 3000),
    costUsd: Math.round(random() * 1e6) / 1e7,
    status,
    ...(status === "error" ? { error: "boom" } : {}),
    priceCheck: random() < 0.1 ? PriceCheck.UNPRICED : PriceCheck.MATCH,
    ...(user ? { userId: user } : {}),
    ...(environment ? { environment } : {}),
    tags,
    metadata: random() < 0.5 ? { team: pick(["x", "y"]) } : {},
  });
}

function scopesOf(t: StoredTrace): string[] {
  return callScopeKeys({
    keyId: t.keyId,
    model: t.model,
    status: t.status,
    costUsd: t.costUsd,
    latencyMs: t.latencyMs,
    unpriced: t.priceCheck === PriceCheck.UNPRICED,
    userId: t.userId,
    environment: t.environment,
    tags: t.tags,
    metadata: Object.entries(t.metadata),
  });
}

const at = (t: StoredTrace) => Number(t.receivedAt!.seconds) * 1000 + Math.floor(t.receivedAt!.nanos / 1e6);

/** What the cells must say: the calls of a scope within [from, to), summed from the traces themselves. */
function expected(traces: StoredTrace[], scope: string, from: number, to: number) {
  const within = traces.filter((t) => at(t) >= from && at(t) < to && scopesOf(t).includes(scope));
  return {
    calls: within.length,
    errors: within.filter((t) => t.status === "error").length,
    costUsd: within.reduce((s, t) => s + t.costUsd, 0),
    unpriced: within.filter((t) => t.priceCheck === PriceCheck.UNPRICED).length,
    p95: bucketPercentile(
      within.map((t) => ({ bucket: latencyBucket(t.latencyMs), calls: 1 })),
      0.95,
    ),
  };
}

async function measured(store: Store, scope: string, resolution: number, from: number, to: number) {
  const cells = await store.scopeCounters.cells(project, scope, resolution as typeof quarterMs, from, to);
  const latency = await store.scopeCounters.latency(project, scope, from, to);
  for (const cell of cells) expect(cell.start % resolution).toBe(0);
  return {
    calls: cells.reduce((s, c) => s + c.calls, 0),
    errors: cells.reduce((s, c) => s + c.errors, 0),
    costUsd: cells.reduce((s, c) => s + c.costUsd, 0),
    unpriced: cells.reduce((s, c) => s + c.unpriced, 0),
    p95: bucketPercentile(latency, 0.95),
  };
}

const scopes = ["project", "key:key_1", "model:gpt-4o-mini", "user:u1", "environment:staging", "tag:a", "metadata:team=x"];

describe.each(adapters)("scope counters: %s", { timeout: 120_000 }, (_name, open) => {
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close();
    store = undefined;
  });

  it("counts a watched scope's calls from the traces before the watch (back-filled) and after it (as batches commit), per quarter hour and minute", async () => {
    ({ store } = await open());
    const random = seededRandom(24).next;
    const now = Date.now();
    // Before the watch: over the last 40 days (older than the keep is left out), and the last hour.
    const before = [
      ...Array.from({ length: 150 }, () => call(random, now - Math.floor(random() * 40 * 24 * hour))),
      ...Array.from({ length: 100 }, () => call(random, now - Math.floor(random() * hour))),
      call(random, now - hour, "acc_other"),
    ];
    expect((await store.writeBatch(before.map((trace) => ({ trace, idempotencyKey: undefined })))).every((o) => o.kind === "stored")).toBe(true);
    await store.scopeCounters.watch(project, scopes);
    // After: received now, in batches.
    const after: StoredTrace[] = [];
    for (let batch = 0; batch < 4; batch++) {
      const traces = Array.from({ length: 25 }, () => call(random, Date.now()));
      after.push(...traces);
      await store.writeBatch(traces.map((trace) => ({ trace, idempotencyKey: undefined })));
    }
    const all = [...before, ...after].filter((t) => t.accountId === project);
    const end = Date.now() + minuteMs;
    for (const scope of scopes) {
      const month = Math.floor((now - 30 * 24 * hour) / quarterMs) * quarterMs;
      const got = await measured(store, scope, quarterMs, month, end);
      const want = expected(all, scope, month, end);
      expect({ ...got, p95: 0 }).toEqual({ ...want, p95: 0, costUsd: expect.closeTo(want.costUsd, 9) });
      const recent = Math.floor((now - 30 * minuteMs) / minuteMs) * minuteMs;
      const gotMinutes = await measured(store, scope, minuteMs, recent, end);
      const wantMinutes = expected(all, scope, recent, end);
      expect(gotMinutes).toEqual({ ...wantMinutes, costUsd: expect.closeTo(wantMinutes.costUsd, 9) });
      expect(gotMinutes.calls).toBeGreaterThan(0);
    }
  });

  it("counts nothing for a scope no rule watches, nor another project's calls; a second watch back-fills nothing twice", async () => {
    ({ store } = await open());
    const random = seededRandom(7).next;
    const traces = Array.from({ length: 20 }, () => call(random, Date.now() - 1000));
    await store.writeBatch(traces.map((trace) => ({ trace, idempotencyKey: undefined })));
    await store.scopeCounters.watch(project, ["project"]);
    await store.scopeCounters.watch(project, ["project", "project"]);
    const more = Array.from({ length: 10 }, () => call(random, Date.now()));
    await store.writeBatch([...more, call(random, Date.now(), "acc_other")].map((trace) => ({ trace, idempotencyKey: undefined })));
    const end = Date.now() + minuteMs;
    expect((await measured(store, "project", quarterMs, 0, end)).calls).toBe(30);
    expect(await store.scopeCounters.cells(project, "tag:a", quarterMs, 0, end)).toEqual([]);
    expect(await store.scopeCounters.cells("acc_other", "project", quarterMs, 0, end)).toEqual([]);
  });

  it("prunes cells past their keep, and the watches (with their cells) of scopes no rule keeps", async () => {
    ({ store } = await open());
    const random = seededRandom(9).next;
    await store.scopeCounters.watch(project, ["project", "tag:a"]);
    const traces = Array.from({ length: 10 }, () => create(StoredTraceSchema, { ...call(random, Date.now()), tags: ["a"] }));
    await store.writeBatch(traces.map((trace) => ({ trace, idempotencyKey: undefined })));
    const end = Date.now() + minuteMs;
    await store.scopeCounters.prune(Date.now() + keepMinuteMs + hour, new Map([[project, new Set(["project"])]]));
    expect(await store.scopeCounters.cells(project, "project", minuteMs, 0, end)).toEqual([]);
    expect((await measured(store, "project", quarterMs, 0, end)).calls).toBe(10);
    expect(await store.scopeCounters.cells(project, "tag:a", quarterMs, 0, end)).toEqual([]);
  });
});

describe.each(adapters)("scope counters under re-pricing: %s", { timeout: 120_000 }, (_name, open) => {
  it("a re-priced trace's cell follows its new cost and price check, as the roll-ups do", async () => {
    const { store } = await open();
    try {
      const random = seededRandom(3).next;
      await store.scopeCounters.watch(project, ["project"]);
      const traces = Array.from({ length: 10 }, () => create(StoredTraceSchema, { ...call(random, Date.now()), priceCheck: PriceCheck.UNPRICED }));
      await store.writeBatch(traces.map((trace) => ({ trace, idempotencyKey: undefined })));
      let job = await store.prices.createRepriceJob(project, { from: new Date(Date.now() - hour), until: new Date(Date.now() + hour) });
      while (job.state === "running") job = await store.prices.repriceBatch(job, () => ({ costUsd: 0.25, serverCostUsd: 0.25, priceCheck: PriceCheck.MATCH }), 4);
      const end = Date.now() + hour;
      const got = await measured(store, "project", quarterMs, 0, end);
      expect(got).toMatchObject({ calls: 10, unpriced: 0, costUsd: expect.closeTo(2.5, 9) });
      expect((await measured(store, "project", minuteMs, 0, end)).costUsd).toBeCloseTo(2.5, 9);
    } finally {
      await store.close();
    }
  });
});
