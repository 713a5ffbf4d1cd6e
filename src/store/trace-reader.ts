import type {
  CountryUsage,
  DayModelUsage,
  LatencyBucket,
  ModelUsage,
  TraceFilter,
  TracePage,
  UsageTotals,
} from "../../gen/calltrace/v1/query_pb.js";

/**
 * The reads the dashboard and its query API need. Every read is scoped to one account: no
 * read can reach another account's traces. Implemented by every store adapter.
 */
export interface TraceReader {
  /** Newest first; `cursor` is the previous page's `nextCursor`. */
  listTraces(accountId: string, filter: TraceFilter, page: { pageSize: number; cursor?: string }): Promise<TracePage>;
  usageTotals(accountId: string, filter: TraceFilter): Promise<UsageTotals>;
  /** Sorted by cost, highest first. */
  usageByModel(accountId: string, filter: TraceFilter): Promise<ModelUsage[]>;
  /** Sorted by UTC day, then provider and model. */
  usageByDay(accountId: string, filter: TraceFilter): Promise<DayModelUsage[]>;
  /** Sorted by calls, most first. */
  usageByCountry(accountId: string, filter: TraceFilter): Promise<CountryUsage[]>;
  latencyHistogram(accountId: string, filter: TraceFilter): Promise<LatencyBucket[]>;
}
