import type {
  RunSummary,
  CountryUsage,
  DayGroupUsage,
  DayModelUsage,
  DayUsage,
  HourUsage,
  GroupUsage,
  LatencyBucket,
  ModelUsage,
  TraceFilter,
  TracePage,
  UsageTotals,
} from "../../gen/calltrace/v1/query_pb.js";
import type { StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import type { ErrorGroups } from "./error-groups-fold.js";
import type { GroupDimension } from "./group-dimension.js";
import type { RunDetail, RunOrder, RunsAfter } from "./run-summary.js";
import type { TraceSort } from "./trace-cursor.js";

/** What page of traces to read: `cursor` is the previous page's `nextCursor`, made with the same sort. */
export interface PageRequest {
  pageSize: number;
  cursor?: string;
  /** Newest first when absent. */
  sort?: TraceSort;
}

/** The groups of a dimension, highest spend first, and how many there were before the limit. */
/**
 * A group-by that would take one query per value (MongoDB's tags and metadata) over more values
 * than it can answer in time; the caller is told to narrow the range or filter, never given a 500.
 */
export class TooManyGroupsError extends Error {}

export interface GroupedUsage {
  groups: GroupUsage[];
  totalGroups: number;
  /** The range's ends were widened to whole UTC days: too many traces in their parts of a day to group in time (D54). */
  wholeDays: boolean;
}

/**
 * The reads the dashboard and its query API need. Every read is scoped to one account: no
 * read can reach another account's traces. Implemented by every store adapter.
 */
export interface TraceReader {
  listTraces(accountId: string, filter: TraceFilter, page: PageRequest): Promise<TracePage>;
  /**
   * One trace by the id the store gave it; undefined when it is not this account's, or not kept
   * any more: past the store's retention, or placed before `keptSinceMs` (the project's own, D64).
   */
  getTrace(accountId: string, id: string, keptSinceMs?: number): Promise<StoredTrace | undefined>;
  usageTotals(accountId: string, filter: TraceFilter): Promise<UsageTotals>;
  /**
   * The traces a key has stored since `monthStart` (the start of a UTC month), counted by when
   * they were received, not where their call time places them (D58); absent where usageTotals is
   * as good. May be above the truth, never below it (the monthly quota's rebuild, D11).
   */
  monthlyTraceCount?(key: { id: string; accountId: string }, monthStart: Date): Promise<number>;
  /** Sorted by cost, highest first. */
  usageByModel(accountId: string, filter: TraceFilter): Promise<ModelUsage[]>;
  /** Sorted by UTC day, then provider and model. */
  usageByDay(accountId: string, filter: TraceFilter): Promise<DayModelUsage[]>;
  /** Every model together per UTC day, sorted by day: the trends of a view. */
  usageByDayTotals(accountId: string, filter: TraceFilter): Promise<DayUsage[]>;
  /** Every model together per UTC hour, sorted by hour, for a range of at most 48 hours (RangeError past it). */
  usageByHourTotals(accountId: string, filter: TraceFilter): Promise<HourUsage[]>;
  /** Sorted by calls, most first. */
  usageByCountry(accountId: string, filter: TraceFilter): Promise<CountryUsage[]>;
  latencyHistogram(accountId: string, filter: TraceFilter): Promise<LatencyBucket[]>;
  /** Sorted by cost, highest first, then by value; at most `limit` groups. The values past the value cap are one group, `other` (D54). */
  usageByGroup(accountId: string, filter: TraceFilter, dimension: GroupDimension, limit: number): Promise<GroupedUsage>;
  /** Calls and cost per UTC day of the given groups (and of the other group, with `other`), sorted by day, then value. */
  usageByGroupAndDay(
    accountId: string,
    filter: TraceFilter,
    dimension: GroupDimension,
    values: string[],
    other?: boolean,
  ): Promise<DayGroupUsage[]>;
  /** Failed calls grouped by masked message (error-group.ts), most calls first; at most `limit` groups. */
  errorGroups(accountId: string, filter: TraceFilter, limit: number): Promise<ErrorGroups>;
  /**
   * Runs (D59) with a call in the filter's range, in `order`; at most `limit`. With `after` (order
   * `recent` only), the runs after that one: the next page.
   */
  listRuns(accountId: string, filter: TraceFilter, order: RunOrder, limit: number, after?: RunsAfter): Promise<RunSummary[]>;
  /**
   * One run by its id (run-id.ts), of its calls within retention and placed at or after
   * `keptSinceMs` (the project's own retention); undefined when it has none in this account.
   */
  getRun(accountId: string, runId: string, keptSinceMs?: number): Promise<RunDetail | undefined>;
}
