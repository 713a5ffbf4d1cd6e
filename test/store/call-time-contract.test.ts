import { create } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { afterAll, describe, expect, it } from "vitest";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import type { StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import type { Store } from "../../src/store/store.js";
import { storeAdapters } from "../support/store-adapters.js";
import { call } from "../support/stored-call.js";

/** D58 on every store: a trace is placed at its call time everywhere, and counted for the quota when it arrived. */
const adapters = storeAdapters();

const hour = 3_600_000;
const day = 24 * hour;
const filter = (init: Parameters<typeof create<typeof TraceFilterSchema>>[1] = {}) => create(TraceFilterSchema, init);

/** A call received at `receivedAt` that may say it was made at `calledAt`. */
function trace({
  receivedAt,
  calledAt,
  ...rest
}: {
  receivedAt: number;
  calledAt?: number;
  accountId: string;
  model?: string;
  userId?: string;
  costUsd?: number;
}): StoredTrace {
  return call({
    at: receivedAt,
    keyId: `key_${rest.accountId}`,
    ...(calledAt === undefined ? {} : { calledAt: timestampFromMs(calledAt) }),
    ...rest,
  });
}

describe.each(adapters)("call time (D58) on the %s store", (_name, open) => {
  const opened: Store[] = [];
  afterAll(async () => {
    for (const store of opened) await store.close();
  });
  const openStore = async (retentionDays?: number) => {
    const { store } = await open(retentionDays === undefined ? {} : { retentionDays });
    opened.push(store);
    return store;
  };

  const now = Date.now();
  // Midday three days ago, received now: placed there, not today.
  const called = Math.floor(now / day) * day - 3 * day + 12 * hour;

  it("places a trace at its call time in pages, totals, days, hours, groups and latency, and keeps both times", async () => {
    const store = await openStore();
    await store.writeBatch([
      {
        trace: trace({ receivedAt: now, calledAt: called, accountId: "acc_p", model: "late-model", userId: "u1", costUsd: 0.25 }),
        idempotencyKey: undefined,
      },
      {
        trace: trace({ receivedAt: now, accountId: "acc_p", model: "today-model", userId: "u2", costUsd: 0.5 }),
        idempotencyKey: undefined,
      },
    ]);
    const callDay = filter({ since: timestampFromMs(called - hour), until: timestampFromMs(called + hour) });
    const page = await store.listTraces("acc_p", callDay, { pageSize: 10 });
    expect(page.traces.map((t) => t.model)).toEqual(["late-model"]);
    const listed = page.traces[0]!;
    expect(timestampMs(listed.calledAt!)).toBe(called);
    expect(timestampMs(listed.receivedAt!)).toBe(now);
    const again = await store.getTrace("acc_p", listed.id);
    expect(again && timestampMs(again.calledAt!)).toBe(called);
    expect(again && timestampMs(again.receivedAt!)).toBe(now);

    expect((await store.usageTotals("acc_p", callDay)).calls).toBe(1n);
    const days = await store.usageByDayTotals(
      "acc_p",
      filter({ since: timestampFromMs(called - day), until: timestampFromMs(now + hour) }),
    );
    const callDayText = new Date(called).toISOString().slice(0, 10);
    const todayText = new Date(now).toISOString().slice(0, 10);
    expect(days.filter((d) => d.totals!.calls > 0n).map((d) => [d.day, Number(d.totals!.calls)])).toEqual([
      [callDayText, 1],
      [todayText, 1],
    ]);
    const byModelAndDay = await store.usageByDay(
      "acc_p",
      filter({ since: timestampFromMs(called - day), until: timestampFromMs(now + hour) }),
    );
    expect(byModelAndDay.map((d) => [d.day, d.model])).toContainEqual([callDayText, "late-model"]);
    expect(byModelAndDay.map((d) => [d.day, d.model])).not.toContainEqual([todayText, "late-model"]);
    const hours = await store.usageByHourTotals(
      "acc_p",
      filter({ since: timestampFromMs(called - 2 * hour), until: timestampFromMs(called + 2 * hour) }),
    );
    expect(hours.filter((h) => h.totals!.calls > 0n).map((h) => timestampMs(h.hour!))).toEqual([Math.floor(called / hour) * hour]);
    const groups = await store.usageByGroupAndDay(
      "acc_p",
      filter({ since: timestampFromMs(called - day), until: timestampFromMs(now + hour) }),
      { kind: "user" },
      ["u1", "u2"],
    );
    expect(groups.map((g) => [g.day, g.value])).toEqual([
      [callDayText, "u1"],
      [todayText, "u2"],
    ]);
    const latency = await store.latencyHistogram("acc_p", callDay);
    expect(latency.reduce((sum, b) => sum + Number(b.calls), 0)).toBe(1);
    const exported = [];
    for await (const t of store.exportTraces({ accountId: "acc_p", until: new Date(called + hour) })) exported.push(t.model);
    expect(exported).toEqual(["late-model"]);
  });

  it("counts a trace for the monthly quota in the month it arrived, not the month its call time places it in", async () => {
    const store = await openStore();
    const monthStart = new Date(Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 1));
    const lastMonth = monthStart.getTime() - 2 * day;
    await store.writeBatch([
      // Called last month, received now: counts this month.
      { trace: trace({ receivedAt: now, calledAt: lastMonth, accountId: "acc_q" }), idempotencyKey: undefined },
      // Called and received this month.
      { trace: trace({ receivedAt: now, calledAt: now - 1000, accountId: "acc_q" }), idempotencyKey: undefined },
      { trace: trace({ receivedAt: now, accountId: "acc_q" }), idempotencyKey: undefined },
    ]);
    expect(store.monthlyTraceCount).toBeDefined();
    expect(await store.monthlyTraceCount!({ id: "key_acc_q", accountId: "acc_q" }, monthStart)).toBe(3);
    // The dashboard still places it last month.
    const placed = await store.usageTotals("acc_q", filter({ since: timestampFromMs(monthStart.getTime()) }));
    expect(placed.calls).toBe(2n);
  });

  it("sweeps and hides a trace by its call time: one called before the retention period is gone though it arrived now", async () => {
    const store = await openStore(5);
    await store.writeBatch([
      { trace: trace({ receivedAt: now, calledAt: now - 6 * day, accountId: "acc_r", model: "old-call" }), idempotencyKey: undefined },
      { trace: trace({ receivedAt: now, calledAt: now - 4 * day, accountId: "acc_r", model: "kept-call" }), idempotencyKey: undefined },
    ]);
    const page = await store.listTraces("acc_r", filter(), { pageSize: 10 });
    expect(page.traces.map((t) => t.model)).toEqual(["kept-call"]);
    await store.deleteExpired();
    const exported = [];
    for await (const t of store.exportTraces({ accountId: "acc_r" })) exported.push(t.model);
    expect(exported).toEqual(["kept-call"]);
  });
});
