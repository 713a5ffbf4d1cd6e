import { expect } from "vitest";
import type { DayUsage } from "../../gen/calltrace/v1/query_pb.js";
import { PriceCheck, type StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import { latencyBucket, latencyBucketBound } from "../../src/store/latency-bucket.js";

/** What every store must answer as the totals of these traces, worked out the slow way. */
export function expectedTotals(traces: StoredTrace[]) {
  const latencies = traces.map((t) => t.latencyMs).sort((a, b) => a - b);
  const rank = (p: number) =>
    latencies.length === 0 ? 0 : latencyBucketBound(latencyBucket(latencies[Math.ceil(p * latencies.length) - 1]!));
  return {
    calls: BigInt(traces.length),
    errors: BigInt(traces.filter((t) => t.status === "error").length),
    tokensIn: BigInt(traces.reduce((s, t) => s + t.tokensIn, 0)),
    tokensOut: BigInt(traces.reduce((s, t) => s + t.tokensOut, 0)),
    costUsd: traces.reduce((s, t) => s + t.costUsd, 0),
    latencyP50Ms: rank(0.5),
    latencyP95Ms: rank(0.95),
    unpricedCalls: BigInt(traces.filter((t) => t.priceCheck === PriceCheck.UNPRICED).length),
    mismatchedCalls: BigInt(traces.filter((t) => t.priceCheck === PriceCheck.MISMATCH).length),
  };
}

/** A store's usage per day (usageByDayTotals) against `chosen`: the days they fall on (`dayOf`), and each day's totals. */
export function expectDayTotals(byDay: DayUsage[], chosen: StoredTrace[], dayOf: (t: StoredTrace) => string, label: string): void {
  expect(
    byDay.map((d) => d.day),
    label,
  ).toEqual([...new Set(chosen.map(dayOf))].sort());
  for (const d of byDay) {
    const { costUsd: cost, ...rest } = expectedTotals(chosen.filter((t) => dayOf(t) === d.day));
    expect(d.totals, `${label} ${d.day}`).toMatchObject(rest);
    expect(d.totals!.costUsd).toBeCloseTo(cost, 9);
  }
}
