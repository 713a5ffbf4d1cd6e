import { create } from "@bufbuild/protobuf";
import {
  CountryUsageSchema,
  DayModelUsageSchema,
  LatencyBucketSchema,
  ModelUsageSchema,
  UsageTotalsSchema,
  type UsageTotals,
} from "../../gen/calltrace/v1/query_pb.js";
import { histogramBoundsMs, latencyBucketBound } from "./latency-bucket.js";
import type { TraceReader } from "./trace-reader.js";
import { resolveTraceFilter, type ResolvedTraceFilter } from "./trace-filter.js";

/** What a usage query groups by, besides the trace status (always, to count errors). */
export interface UsageGrouping {
  /** The UTC day. */
  day?: boolean;
  /** The provider and model. */
  model?: boolean;
  country?: boolean;
  /** The latency bucket (latency-bucket.ts). */
  latency?: boolean;
}

/** One group of traces as an adapter's aggregation returns it; dimensions not grouped by are absent. */
export interface UsageCell {
  /** YYYY-MM-DD (UTC). */
  day?: string;
  provider?: string;
  model?: string;
  country?: string;
  bucket?: number;
  status: string;
  calls: number;
  costUsd: number;
  tokensIn: number;
  tokensOut: number;
}

/**
 * The one aggregation an adapter implements: counts and sums per group. Everything else
 * (error rates, percentiles, ordering) is folded here, once for every store, using only
 * $match, $group and $sum on the MongoDB side, which FerretDB supports too.
 */
export type UsageCells = (accountId: string, filter: ResolvedTraceFilter, grouping: UsageGrouping) => Promise<UsageCell[]>;

/** The aggregate reads of TraceReader, built on an adapter's UsageCells. */
export function usageReader(cells: UsageCells, retentionMs: number): Omit<TraceReader, "listTraces"> {
  const query = (accountId: string, filter: Parameters<TraceReader["usageTotals"]>[1], grouping: UsageGrouping) =>
    cells(accountId, resolveTraceFilter(filter, retentionMs), grouping);

  return {
    async usageTotals(accountId, filter) {
      return totalsOf(await query(accountId, filter, { latency: true }));
    },
    async usageByModel(accountId, filter) {
      const groups = groupBy(await query(accountId, filter, { model: true, latency: true }), (c) => [c.provider ?? "", c.model ?? ""]);
      return [...groups.values()]
        .map((group) => create(ModelUsageSchema, { provider: group[0]!.provider ?? "", model: group[0]!.model ?? "", totals: totalsOf(group) }))
        .sort((a, b) => b.totals!.costUsd - a.totals!.costUsd || compare(a.provider, b.provider) || compare(a.model, b.model));
    },
    async usageByDay(accountId, filter) {
      const groups = groupBy(await query(accountId, filter, { day: true, model: true, latency: true }), (c) => [c.day ?? "", c.provider ?? "", c.model ?? ""]);
      return [...groups.values()]
        .map((group) =>
          create(DayModelUsageSchema, { day: group[0]!.day ?? "", provider: group[0]!.provider ?? "", model: group[0]!.model ?? "", totals: totalsOf(group) }),
        )
        .sort((a, b) => compare(a.day, b.day) || compare(a.provider, b.provider) || compare(a.model, b.model));
    },
    async usageByCountry(accountId, filter) {
      const groups = groupBy(await query(accountId, filter, { country: true }), (c) => [c.country ?? ""]);
      return [...groups.values()]
        .map((group) =>
          create(CountryUsageSchema, {
            country: group[0]!.country ?? "",
            calls: BigInt(sum(group, (c) => c.calls)),
            costUsd: sum(group, (c) => c.costUsd),
          }),
        )
        .sort((a, b) => Number(b.calls - a.calls) || compare(a.country, b.country));
    },
    async latencyHistogram(accountId, filter) {
      const counts = new Array<number>(histogramBoundsMs.length + 1).fill(0);
      for (const cell of await query(accountId, filter, { latency: true })) {
        const bound = latencyBucketBound(cell.bucket ?? 0);
        const slot = histogramBoundsMs.findIndex((upper) => bound <= upper);
        counts[slot === -1 ? histogramBoundsMs.length : slot]! += cell.calls;
      }
      return counts.map((calls, i) => create(LatencyBucketSchema, { upperBoundMs: histogramBoundsMs[i] ?? 0, calls: BigInt(calls) }));
    },
  };
}

/** Sums a set of cells; percentiles by nearest rank over the latency buckets. */
function totalsOf(cells: UsageCell[]): UsageTotals {
  const calls = sum(cells, (c) => c.calls);
  const perBucket = new Map<number, number>();
  for (const cell of cells) perBucket.set(cell.bucket ?? 0, (perBucket.get(cell.bucket ?? 0) ?? 0) + cell.calls);
  const buckets = [...perBucket.entries()].sort((a, b) => a[0] - b[0]);
  const percentile = (p: number): number => {
    if (calls === 0) return 0;
    const rank = Math.ceil(p * calls);
    let seen = 0;
    for (const [bucket, n] of buckets) {
      seen += n;
      if (seen >= rank) return latencyBucketBound(bucket);
    }
    return 0;
  };
  return create(UsageTotalsSchema, {
    calls: BigInt(calls),
    errors: BigInt(sum(cells, (c) => (c.status === "error" ? c.calls : 0))),
    costUsd: sum(cells, (c) => c.costUsd),
    tokensIn: BigInt(sum(cells, (c) => c.tokensIn)),
    tokensOut: BigInt(sum(cells, (c) => c.tokensOut)),
    latencyP50Ms: percentile(0.5),
    latencyP95Ms: percentile(0.95),
  });
}

function groupBy(cells: UsageCell[], key: (cell: UsageCell) => string[]): Map<string, UsageCell[]> {
  const groups = new Map<string, UsageCell[]>();
  for (const cell of cells) {
    const k = JSON.stringify(key(cell));
    const group = groups.get(k);
    if (group) group.push(cell);
    else groups.set(k, [cell]);
  }
  return groups;
}

function sum(cells: UsageCell[], value: (cell: UsageCell) => number): number {
  let total = 0;
  for (const cell of cells) total += value(cell);
  return total;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
