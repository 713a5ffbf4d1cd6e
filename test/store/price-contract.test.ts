import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { PriceCheck, StoredTraceSchema, TraceSource } from "../../gen/calltrace/v1/trace_pb.js";
import { PriceBook } from "../../src/pricing/price-match.js";
import { repriceRunner, repricer } from "../../src/pricing/reprice-job.js";
import type { CustomPriceInput } from "../../src/store/price-store.js";
import type { Store } from "../../src/store/store.js";
import { storeAdapters } from "../support/store-adapters.js";

/** The prices part of the store contract: custom prices, and re-pricing stored traces with their roll-ups, on every adapter. */
const adapters = storeAdapters();
const day = 86_400_000;
const today = Math.floor(Date.now() / day) * day;

const discount: CustomPriceInput = {
  provider: "openai",
  matchKind: "exact",
  pattern: "gpt-4o",
  price: { input: 1, output: 2 },
  effectiveFrom: new Date(today - 2 * day),
  effectiveUntil: undefined,
};

/** A call of 1M tokens in and 1M out, received at `at`, as the API (client-priced) or OTLP (server-priced) stored it before any custom price. */
function call(projectId: string, at: number, model: string, source: TraceSource, clientCost: number, serverCost: number | undefined, extra: object = {}) {
  const otlp = source === TraceSource.OTLP;
  const priceCheck = serverCost === undefined ? PriceCheck.UNPRICED : otlp ? PriceCheck.SERVER : Math.abs(clientCost - serverCost) <= serverCost * 0.01 ? PriceCheck.MATCH : PriceCheck.MISMATCH;
  return {
    trace: create(StoredTraceSchema, {
      receivedAt: timestampFromMs(at),
      keyId: `key_${projectId}`,
      accountId: projectId,
      country: "FR",
      provider: "openai",
      model,
      tokensIn: 1_000_000,
      tokensOut: 1_000_000,
      latencyMs: 100,
      costUsd: otlp ? (serverCost ?? 0) : clientCost,
      status: "success",
      userId: "u1",
      source,
      priceCheck,
      ...(serverCost === undefined ? {} : { serverCostUsd: serverCost }),
      ...extra,
    }),
    idempotencyKey: undefined,
  };
}

describe.each(adapters)("price store contract: %s", (_name, open) => {
  let store: Store;
  let reopen: () => Promise<Store>;
  beforeEach(async () => {
    ({ store, reopen } = await open());
  });
  afterEach(async () => {
    await store.close();
  });

  it("keeps each project's custom prices apart, updates and deletes them, and deletes them with the project", async () => {
    const { project } = await store.teams.createOrganization({ name: "Acme", project: { name: "prod", plan: "free" } });
    const other = await store.teams.createProject({ organizationId: project.organizationId, name: "other", plan: "free" });
    const created = await store.prices.createPrice(project.id, discount);
    expect(created).toMatchObject({ projectId: project.id, provider: "openai", matchKind: "exact", pattern: "gpt-4o", price: { input: 1, output: 2 } });
    expect(created.effectiveFrom).toEqual(discount.effectiveFrom);
    expect(created.effectiveUntil).toBeUndefined();
    const tiered = { input: 3, output: 15, cache_write_1h: 6, tiers: [{ above_input_tokens: 200_000, input: 6, output: 22.5 }], service_tiers: { batch: { input: 1.5, output: 7.5 } } };
    const regex = await store.prices.createPrice(project.id, { ...discount, provider: "anthropic", matchKind: "regex", pattern: "^claude-.*-custom$", price: tiered, effectiveFrom: undefined });
    // Listed by creation time, then id: the two may share a millisecond.
    const listed = [created, regex].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1));
    expect(await store.prices.listPrices(project.id)).toEqual(listed);
    expect(await store.prices.listPrices(other.id)).toEqual([]);

    const until = new Date(today + day);
    const updated = await store.prices.updatePrice(project.id, created.id, { ...discount, price: { input: 0.5, output: 1 }, effectiveUntil: until });
    expect(updated).toMatchObject({ id: created.id, price: { input: 0.5, output: 1 }, effectiveUntil: until, createdAt: created.createdAt });
    expect(await store.prices.updatePrice(other.id, created.id, discount)).toBeUndefined();
    expect(await store.prices.deletePrice(other.id, created.id)).toBe(false);
    expect((await store.prices.listPrices(project.id)).map((p) => p.price)).toEqual(listed.map((p) => (p === created ? { input: 0.5, output: 1 } : tiered)));
    expect(await store.prices.deletePrice(project.id, created.id)).toBe(true);
    expect(await store.prices.listPrices(project.id)).toEqual([regex]);

    await store.prices.createPrice(other.id, discount);
    const job = await store.prices.createRepriceJob(other.id, { from: new Date(0), until: new Date() });
    expect(await store.teams.deleteProject(other.id)).toBe(true);
    expect(await store.prices.listPrices(other.id)).toEqual([]);
    expect(await store.prices.getRepriceJob(other.id, job.id)).toBeUndefined();
    expect(await store.prices.listPrices(project.id)).toEqual([regex]);
  });

  it("re-prices a date range with the project's prices, its roll-ups with it, the same twice, and resumes after a restart", async () => {
    const { project } = await store.teams.createOrganization({ name: "Acme", project: { name: "prod", plan: "free" } });
    const p = project.id;
    // gpt-4o's catalog price: $2.50 in and $10 out per million; the negotiated one is $1 and $2.
    const catalog = 12.5;
    await store.writeBatch([
      call(p, today - 3 * day + 1000, "gpt-4o", TraceSource.API, 3, catalog), // before the discount: stays MATCH... at the catalog
      call(p, today - day + 1000, "gpt-4o", TraceSource.API, 3, catalog), // client paid the discount: MISMATCH until re-priced
      call(p, today - day + 2000, "gpt-4o", TraceSource.OTLP, 0, catalog),
      // One failed OTLP call (it still used tokens), in a run of its own: runs and error groups sum its cost too.
      call(p, today - day + 3000, "ft-acme-1", TraceSource.OTLP, 0, undefined, { otlpTraceId: "ab".repeat(16), otlpSpanId: "cd".repeat(8), status: "error", error: "timeout after 30 s" }),
      call(p, today + 1000, "gpt-4o", TraceSource.API, 3, catalog),
      call(p, today + 2000, "gpt-4o-mini", TraceSource.API, 0.75, 0.75),
    ]);
    await store.prices.createPrice(p, discount);
    await store.prices.createPrice(p, { ...discount, matchKind: "prefix", pattern: "ft-acme-", price: { input: 4, output: 4 } });

    const whole = create(TraceFilterSchema, { since: timestampFromMs(today - 4 * day), until: timestampFromMs(today + day) });
    const before = await store.usageTotals(p, whole);
    expect(Number(before.mismatchedCalls)).toBe(3);
    expect(Number(before.unpricedCalls)).toBe(1);

    // One batch of two, then a "crash": the job stays running where its batch left it.
    const range = { from: new Date(today - 4 * day), until: new Date(today + day) };
    let job = await store.prices.createRepriceJob(p, range);
    expect(job).toMatchObject({ state: "running", total: 6, done: 0 });
    job = await store.prices.repriceBatch(job, repricer(new PriceBook(await store.prices.listPrices(p))), 2);
    expect(job).toMatchObject({ state: "running", done: 2, changed: 1 });
    await store.close();
    store = await reopen();

    const runner = repriceRunner(store.prices, { batchSize: 2, pauseMs: 0, staleMs: 0 });
    await runner.resumeStale();
    await runner.settled();
    job = (await store.prices.getRepriceJob(p, job.id))!;
    expect(job).toMatchObject({ state: "done", total: 6, done: 6, changed: 4 });

    const traces = (await store.listTraces(p, whole, { pageSize: 50 })).traces.sort((a, b) => Number(a.receivedAt!.seconds - b.receivedAt!.seconds));
    expect(traces.map((t) => [t.model, t.costUsd, t.serverCostUsd, t.priceCheck])).toEqual([
      ["gpt-4o", 3, catalog, PriceCheck.MISMATCH],
      ["gpt-4o", 3, 3, PriceCheck.MATCH],
      ["gpt-4o", 3, 3, PriceCheck.SERVER],
      ["ft-acme-1", 8, 8, PriceCheck.SERVER],
      ["gpt-4o", 3, 3, PriceCheck.MATCH],
      ["gpt-4o-mini", 0.75, 0.75, PriceCheck.MATCH],
    ]);
    const after = await store.usageTotals(p, whole);
    expect(Number(after.calls)).toBe(6);
    expect(Number(after.mismatchedCalls)).toBe(1);
    expect(Number(after.unpricedCalls)).toBe(0);
    // The dashboard's sum: what the client sent, and the server's price where the client sent none (OTLP).
    expect(after.costUsd).toBeCloseTo(3 + 3 + 3 + 8 + 3 + 0.75, 9);
    const runs = await store.listRuns(p, whole, "recent", 10);
    expect(runs.map((r) => [r.id, r.costUsd])).toEqual([[`otlp:${"ab".repeat(16)}`, 8]]);
    const errors = await store.errorGroups(p, whole, 10);
    expect(errors.groups.map((g) => g.costUsd)).toEqual([8]);
    const users = await store.usageByGroup(p, whole, { kind: "user" }, 10);
    expect(users.groups.map((g) => [g.value, g.totals!.costUsd.toFixed(9), Number(g.totals!.mismatchedCalls)])).toEqual([["u1", after.costUsd.toFixed(9), 1]]);

    // Again, with the same prices: nothing changes.
    const repeat = repriceRunner(store.prices, { batchSize: 4, pauseMs: 0 });
    const again = await repeat.start(p, range);
    await repeat.settled();
    expect(await store.prices.getRepriceJob(p, again.id)).toMatchObject({ state: "done", done: 6, changed: 0 });
    expect(await store.usageTotals(p, whole)).toEqual(after);
  });
});
