import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { TraceFilterSchema, type TraceFilter } from "../../gen/calltrace/v1/query_pb.js";

/** Time ranges offered everywhere; "custom" uses `from` and `to`. */
export const ranges = { "1h": 3600e3, "24h": 86400e3, "7d": 7 * 86400e3, "30d": 30 * 86400e3, "90d": 90 * 86400e3, all: 0, custom: 0 } as const;
export type Range = keyof typeof ranges;

/** The filters of the traces and geography pages, kept in the address bar so a view can be shared. */
export interface Filters {
  range: Range;
  /** datetime-local values, for the custom range. */
  from: string;
  to: string;
  keyId: string;
  provider: string;
  model: string;
  status: string;
}

const statuses = ["", "success", "error"];

/** A datetime-local value (no zone) read as UTC, like every time on the pages. */
function utcTime(value: string): Date {
  return new Date(/(Z|[+-]\d\d:\d\d)$/i.test(value) ? value : `${value}Z`);
}

/** A datetime-local value that names a real time, or "" (an address bar can hold anything). */
function validTime(value: string | null): string {
  return value && /^\d{4}-\d\d-\d\dT/.test(value) && !Number.isNaN(utcTime(value).getTime()) ? value : "";
}

/** The filters of an address; values that make no sense fall back to their defaults (queryProblems says which). */
export function filtersFromQuery(query: URLSearchParams, defaultRange: Range = "24h"): Filters {
  const range = query.get("range") as Range | null;
  const status = query.get("status") ?? "";
  return {
    range: range && Object.hasOwn(ranges, range) ? range : defaultRange,
    from: validTime(query.get("from")),
    to: validTime(query.get("to")),
    keyId: query.get("key") ?? "",
    provider: query.get("provider") ?? "",
    model: query.get("model") ?? "",
    status: statuses.includes(status) ? status : "",
  };
}

/** What filtersFromQuery had to ignore in an address, said to the reader instead of a blank page. */
export function queryProblems(query: URLSearchParams): string[] {
  const problems: string[] = [];
  const range = query.get("range");
  if (range !== null && !Object.hasOwn(ranges, range)) problems.push(`unknown time range "${range}"`);
  for (const name of ["from", "to"]) {
    const value = query.get(name);
    if (value && !validTime(value)) problems.push(`"${value}" is not a time (${name})`);
  }
  const status = query.get("status");
  if (status !== null && !statuses.includes(status)) problems.push(`unknown status "${status}"`);
  return problems;
}

export function filtersToQuery(f: Filters): string {
  const q = new URLSearchParams();
  q.set("range", f.range);
  if (f.range === "custom") {
    if (f.from) q.set("from", f.from);
    if (f.to) q.set("to", f.to);
  }
  if (f.keyId) q.set("key", f.keyId);
  if (f.provider) q.set("provider", f.provider);
  if (f.model) q.set("model", f.model);
  if (f.status) q.set("status", f.status);
  return q.toString();
}

/** What the ranges mean, said on every page that offers them. */
export const rangeMeaning = "1h and 24h count back from now; 7, 30 and 90 days are whole UTC days, today included. Times are UTC.";

const dayMs = 86_400_000;

/**
 * Where a range starts, the same on every page: hour ranges count back from now, day ranges
 * are whole UTC days with today the last of them (as the per-day charts and the store's daily
 * roll-ups count them).
 */
export function rangeStart(range: Exclude<Range, "all" | "custom">, now: number): Date {
  const span = ranges[range];
  if (span < dayMs * 2) return new Date(now - span);
  return new Date(Math.floor(now / dayMs) * dayMs - (span / dayMs - 1) * dayMs);
}

/** The time bounds of a range, as of now. */
export function bounds(f: Filters): { since?: Date; until?: Date } {
  if (f.range === "custom") {
    return { ...(f.from ? { since: utcTime(f.from) } : {}), ...(f.to ? { until: utcTime(f.to) } : {}) };
  }
  return f.range === "all" ? {} : { since: rangeStart(f.range, Date.now()) };
}

/**
 * The period before a range, of the same length, to compare with: a preset moves back by its own
 * length (the 7 days before "7d", up to the same time of day); a custom range by its span.
 * Undefined where there is nothing before to compare (all time, or a custom range without a start).
 */
export function previousBounds(f: Filters, now = Date.now()): { since: Date; until: Date } | undefined {
  const { since, until } = bounds(f);
  if (!since) return undefined;
  const end = until?.getTime() ?? now;
  const shift = f.range === "custom" ? end - since.getTime() : ranges[f.range];
  if (shift <= 0) return undefined;
  return { since: new Date(since.getTime() - shift), until: new Date(end - shift) };
}

/**
 * The filter of the models a page offers in its model box: from the start of the UTC day its range
 * starts in, so the store sums them from its daily roll-ups and not every call of a rolling 24
 * hours (D71). A model used earlier that day is offered too; the page's rows keep the exact range.
 */
export function modelsFilter(f: Filters): TraceFilter {
  const { since } = bounds(f);
  return create(TraceFilterSchema, since ? { since: timestampFromDate(new Date(Math.floor(since.getTime() / dayMs) * dayMs)) } : {});
}

/** The contract's TraceFilter for these filters; `period` replaces their time bounds (the previous period). */
export function traceFilter(f: Filters, period?: { since: Date; until: Date }): TraceFilter {
  const { since, until } = period ?? bounds(f);
  return create(TraceFilterSchema, {
    ...(since ? { since: timestampFromDate(since) } : {}),
    ...(until ? { until: timestampFromDate(until) } : {}),
    keyId: f.keyId,
    provider: f.provider,
    // The model box finds every model whose name contains the text, in any case.
    modelContains: f.model,
    status: f.status,
  });
}

/** The download link's query: the same filter with ISO times (src/dashboard/trace-download.ts). */
export function downloadQuery(f: Filters): string {
  const { since, until } = bounds(f);
  const q = new URLSearchParams();
  if (since) q.set("since", since.toISOString());
  if (until) q.set("until", until.toISOString());
  if (f.keyId) q.set("key_id", f.keyId);
  if (f.provider) q.set("provider", f.provider);
  if (f.model) q.set("model_contains", f.model);
  if (f.status) q.set("status", f.status);
  return q.toString();
}
