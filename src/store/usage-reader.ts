import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  CountryUsageSchema,
  DayGroupUsageSchema,
  DayModelUsageSchema,
  DayUsageSchema,
  HourUsageSchema,
  GroupUsageSchema,
  LatencyBucketSchema,
  ModelUsageSchema,
  UsageTotalsSchema,
  type UsageTotals,
} from "../../gen/calltrace/v1/query_pb.js";
import type { GroupDimension } from "./group-dimension.js";
import { bucketPercentile, histogramBoundsMs, latencyBucketBound } from "./latency-bucket.js";
import type { TraceReader } from "./trace-reader.js";
import { otherValue } from "./value-cap.js";
import { resolveTraceFilter, type ResolvedTraceFilter } from "./trace-filter.js";

/** What a usage query groups by, besides the trace status (always, to count errors). */
export interface UsageGrouping {
  /** The UTC day. */
  day?: boolean;
  /** The UTC hour, alone (no other dimension), for ranges of at most maxHours. */
  hour?: boolean;
  /** The provider and model. */
  model?: boolean;
  country?: boolean;
  /** Calls per latency bucket (latency-bucket.ts). */
  latency?: boolean;
  /** Sums per status; false when only the latency buckets are wanted. Default true. */
  sums?: boolean;
  /** One dimension of the trace (user, tag, a metadata key, ...): its value is the cell's `group`. */
  group?: GroupDimension;
  /** With `group`: only these values of it (the empty string: traces without one). */
  groupValues?: string[];
  /**
   * With `group` alone: the adapter may answer the sums of only the groups that can rank among the
   * top `top` by cost (ties by value), counting every group in `totalGroups`.
   */
  top?: number;
}

/** The dimensions of one group of traces; those not grouped by are absent. */
export interface UsageGroup {
  /** YYYY-MM-DD (UTC). */
  day?: string;
  /** The start of the UTC hour, in ms. */
  hour?: number;
  provider?: string;
  model?: string;
  country?: string;
  /** The value of the grouping's dimension; empty for traces without one. */
  group?: string;
}

/** Sums over one group of traces of one status. */
export interface UsageCell extends UsageGroup {
  status: string;
  calls: number;
  costUsd: number;
  tokensIn: number;
  tokensOut: number;
  /** Calls the server could not price (PriceCheck.UNPRICED); absent where a roll-up does not count them (attribute groups). */
  unpriced?: number;
  /** Calls whose client cost disagrees with the server's price (PriceCheck.MISMATCH); absent like `unpriced`. */
  mismatched?: number;
}

/** Calls of one group in one latency bucket. */
export interface LatencyCell extends UsageGroup {
  bucket: number;
  calls: number;
}

/** What an adapter's aggregation answers: sums per group and status, and (when asked) calls per group and latency bucket. */
export interface UsageCells {
  sums: UsageCell[];
  latency: LatencyCell[];
  /** An attribute's groups were read over whole UTC days around the range's ends: too many traces there to group in time. */
  wholeDays?: boolean;
  /** The groups there were, when the adapter answered only the top ones (UsageGrouping's `top`). */
  totalGroups?: number;
  /** `latency` holds every group's calls per bucket too, read in the pass that summed them: no second read for the top groups'. */
  latencyOfEveryGroup?: boolean;
}

/**
 * The one aggregation an adapter implements: counts and sums per group. Everything else
 * (error rates, percentiles, ordering) is folded here, once for every store, using only
 * $match, $group and $sum on the MongoDB side, which FerretDB supports too.
 */
export type UsageQuery = (accountId: string, filter: ResolvedTraceFilter, grouping: UsageGrouping) => Promise<UsageCells>;

export const hourMs = 3_600_000;
/** The longest range usageByHourTotals answers, in hours (QueryService refuses longer ones). */
export const maxHours = 48;

/** The aggregate reads of TraceReader, built on an adapter's UsageCells. */
export function usageReader(
  cells: UsageQuery,
  retentionMs: number,
): Omit<TraceReader, "listTraces" | "getTrace" | "errorGroups" | "listRuns" | "getRun"> {
  const query = (accountId: string, filter: Parameters<TraceReader["usageTotals"]>[1], grouping: UsageGrouping) =>
    cells(accountId, resolveTraceFilter(filter, retentionMs), grouping);

  return {
    async usageTotals(accountId, filter) {
      const { sums, latency } = await query(accountId, filter, { latency: true });
      return totalsOf(sums, latency);
    },
    async usageByModel(accountId, filter) {
      const key = (c: UsageGroup) => [c.provider ?? "", c.model ?? ""];
      const { sums, latency } = await query(accountId, filter, { model: true, latency: true });
      const latencies = groupBy(latency, key);
      return [...groupBy(sums, key)]
        .map(([k, group]) =>
          create(ModelUsageSchema, {
            provider: group[0]!.provider ?? "",
            model: group[0]!.model ?? "",
            totals: totalsOf(group, latencies.get(k) ?? []),
          }),
        )
        .sort((a, b) => b.totals!.costUsd - a.totals!.costUsd || compare(a.provider, b.provider) || compare(a.model, b.model));
    },
    async usageByDay(accountId, filter) {
      const key = (c: UsageGroup) => [c.day ?? "", c.provider ?? "", c.model ?? ""];
      const { sums, latency } = await query(accountId, filter, { day: true, model: true, latency: true });
      const latencies = groupBy(latency, key);
      return [...groupBy(sums, key)]
        .map(([k, group]) =>
          create(DayModelUsageSchema, {
            day: group[0]!.day ?? "",
            provider: group[0]!.provider ?? "",
            model: group[0]!.model ?? "",
            totals: totalsOf(group, latencies.get(k) ?? []),
          }),
        )
        .sort((a, b) => compare(a.day, b.day) || compare(a.provider, b.provider) || compare(a.model, b.model));
    },
    async usageByDayTotals(accountId, filter) {
      const key = (c: UsageGroup) => [c.day ?? ""];
      const { sums, latency } = await query(accountId, filter, { day: true, latency: true });
      const latencies = groupBy(latency, key);
      return [...groupBy(sums, key)]
        .map(([k, group]) => create(DayUsageSchema, { day: group[0]!.day ?? "", totals: totalsOf(group, latencies.get(k) ?? []) }))
        .sort((a, b) => compare(a.day, b.day));
    },
    async usageByHourTotals(accountId, filter) {
      const resolved = resolveTraceFilter(filter, retentionMs);
      const hours = (Math.min(resolved.untilMs, Date.now() + hourMs) - resolved.sinceMs) / hourMs;
      if (hours > maxHours + 1) throw new RangeError(`usage by hour spans ${Math.ceil(hours)} hours, more than ${maxHours}`);
      const key = (c: UsageGroup) => [String(c.hour)];
      const { sums, latency } = await cells(accountId, resolved, { hour: true, latency: true });
      const latencies = groupBy(latency, key);
      return [...groupBy(sums, key)]
        .map(([k, group]) =>
          create(HourUsageSchema, { hour: timestampFromMs(group[0]!.hour ?? 0), totals: totalsOf(group, latencies.get(k) ?? []) }),
        )
        .sort((a, b) => Number(a.hour!.seconds - b.hour!.seconds));
    },
    async usageByCountry(accountId, filter) {
      const groups = groupBy((await query(accountId, filter, { country: true })).sums, (c) => [c.country ?? ""]);
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
    async usageByGroup(accountId, filter, dimension, limit) {
      const key = (c: UsageGroup) => [c.group ?? ""];
      const answer = await query(accountId, filter, { group: dimension, top: limit });
      const ranked = [...groupBy(answer.sums, key).values()]
        .map((group) => ({ value: group[0]!.group ?? "", cells: group, cost: sum(group, (c) => c.costUsd) }))
        .sort((a, b) => b.cost - a.cost || compare(a.value, b.value));
      const top = ranked.slice(0, limit);
      // Percentiles only for the groups answered: with 10,000 users, most latency rows are never read.
      const latency =
        top.length === 0
          ? []
          : answer.latencyOfEveryGroup
            ? answer.latency
            : (await query(accountId, filter, { group: dimension, groupValues: top.map((g) => g.value), latency: true, sums: false }))
                .latency;
      const latencies = groupBy(latency, key);
      return {
        groups: top.map((g) =>
          create(GroupUsageSchema, {
            ...groupValue(g.value),
            totals: totalsOf(g.cells, latencies.get(JSON.stringify([g.value])) ?? []),
          }),
        ),
        totalGroups: answer.totalGroups ?? ranked.length,
        wholeDays: answer.wholeDays ?? false,
      };
    },
    async usageByGroupAndDay(accountId, filter, dimension, values, other = false) {
      const wanted = [...new Set(values.filter((v) => v !== otherValue))];
      if (other) wanted.push(otherValue);
      const { sums } = await query(accountId, filter, { day: true, group: dimension, groupValues: wanted });
      return [...groupBy(sums, (c) => [c.day ?? "", c.group ?? ""]).values()]
        .map((group) =>
          create(DayGroupUsageSchema, {
            day: group[0]!.day ?? "",
            ...groupValue(group[0]!.group ?? ""),
            calls: BigInt(sum(group, (c) => c.calls)),
            costUsd: sum(group, (c) => c.costUsd),
          }),
        )
        .sort((a, b) => compare(a.day, b.day) || Number(a.other) - Number(b.other) || compare(a.value, b.value));
    },
    async latencyHistogram(accountId, filter) {
      const counts = new Array<number>(histogramBoundsMs.length + 1).fill(0);
      for (const cell of (await query(accountId, filter, { latency: true, sums: false })).latency) {
        const bound = latencyBucketBound(cell.bucket);
        const slot = histogramBoundsMs.findIndex((upper) => bound <= upper);
        counts[slot === -1 ? histogramBoundsMs.length : slot]! += cell.calls;
      }
      return counts.map((calls, i) => create(LatencyBucketSchema, { upperBoundMs: histogramBoundsMs[i] ?? 0, calls: BigInt(calls) }));
    },
  };
}

/** A group's value as the contract answers it: the other group (D54) is flagged, with no value. */
function groupValue(value: string): { value: string; other: boolean } {
  return value === otherValue ? { value: "", other: true } : { value, other: false };
}

/** Sums a group's cells; percentiles by nearest rank over its latency buckets. */
function totalsOf(cells: UsageCell[], latency: LatencyCell[]): UsageTotals {
  const calls = sum(cells, (c) => c.calls);
  const percentile = (p: number): number => bucketPercentile(latency, p, calls);
  return create(UsageTotalsSchema, {
    calls: BigInt(calls),
    errors: BigInt(sum(cells, (c) => (c.status === "error" ? c.calls : 0))),
    costUsd: sum(cells, (c) => c.costUsd),
    tokensIn: BigInt(sum(cells, (c) => c.tokensIn)),
    tokensOut: BigInt(sum(cells, (c) => c.tokensOut)),
    latencyP50Ms: percentile(0.5),
    latencyP95Ms: percentile(0.95),
    unpricedCalls: BigInt(sum(cells, (c) => c.unpriced ?? 0)),
    mismatchedCalls: BigInt(sum(cells, (c) => c.mismatched ?? 0)),
  });
}

function groupBy<T extends UsageGroup>(cells: T[], key: (cell: T) => string[]): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const cell of cells) {
    const k = JSON.stringify(key(cell));
    const group = groups.get(k);
    if (group) group.push(cell);
    else groups.set(k, [cell]);
  }
  return groups;
}

function sum<T>(cells: T[], value: (cell: T) => number): number {
  let total = 0;
  for (const cell of cells) total += value(cell);
  return total;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
