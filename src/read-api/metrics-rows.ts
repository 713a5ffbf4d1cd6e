import type { TraceFilter, UsageTotals } from "../../gen/calltrace/v1/query_pb.js";
import type { TraceReader } from "../store/trace-reader.js";
import type { MetricsQuery } from "./read-query.js";

/** One row of GET /v1/metrics: a group (null for the total) and its sums. */
export interface MetricsRow {
  group: string | null;
  /** With an attribute group_by, the other group (D54): the values past the bound per day, `group` empty. */
  other?: true;
  calls: number;
  errors: number;
  /** "Infinity" when the clients' costs add up past the largest double, as protobuf's JSON writes it. */
  cost_usd: number | "Infinity";
  tokens_in: number;
  tokens_out: number;
  p50_latency_ms: number;
  p95_latency_ms: number;
}

export interface MetricsAnswer {
  data: MetricsRow[];
  /** With an attribute group_by: how many groups matched, of which `data` holds the first `limit`. */
  total_groups?: number;
  /** With an attribute group_by: present (true) when the range's ends were counted as whole UTC days (D54). */
  whole_days?: true;
}

/**
 * The rows of a metrics query, from the store's roll-up reads that the dashboard's QueryService
 * answers from (usageTotals, usageByDayTotals, usageByGroup), so both show the same figures.
 */
export async function metricsRows(
  reader: TraceReader,
  projectId: string,
  filter: TraceFilter,
  query: MetricsQuery,
): Promise<MetricsAnswer> {
  const { groupBy } = query;
  if (groupBy === undefined) return { data: [row(null, await reader.usageTotals(projectId, filter))] };
  if (groupBy.kind === "day") {
    return { data: (await reader.usageByDayTotals(projectId, filter)).map((d) => row(d.day, d.totals)) };
  }
  const { groups, totalGroups, wholeDays } = await reader.usageByGroup(projectId, filter, groupBy, query.limit);
  return {
    data: groups.map((g) => (g.other ? { ...row("", g.totals), other: true } : row(g.value, g.totals))),
    total_groups: totalGroups,
    ...(wholeDays ? { whole_days: true as const } : {}),
  };
}

function row(group: string | null, totals: UsageTotals | undefined): MetricsRow {
  return {
    group,
    calls: Number(totals?.calls ?? 0n),
    errors: Number(totals?.errors ?? 0n),
    cost_usd: jsonDouble(totals?.costUsd ?? 0),
    tokens_in: Number(totals?.tokensIn ?? 0n),
    tokens_out: Number(totals?.tokensOut ?? 0n),
    p50_latency_ms: totals?.latencyP50Ms ?? 0,
    p95_latency_ms: totals?.latencyP95Ms ?? 0,
  };
}

/**
 * A sum of finite costs can still pass the largest double (each may be up to about 1.8e308, D5);
 * JSON has no infinity, so it is written as protobuf's JSON mapping writes it, never as null.
 */
function jsonDouble(sum: number): number | "Infinity" {
  return Number.isFinite(sum) ? sum : "Infinity";
}
