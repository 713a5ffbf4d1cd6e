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

export function filtersFromQuery(query: URLSearchParams, defaultRange: Range = "24h"): Filters {
  const range = query.get("range") as Range | null;
  return {
    range: range && range in ranges ? range : defaultRange,
    from: query.get("from") ?? "",
    to: query.get("to") ?? "",
    keyId: query.get("key") ?? "",
    provider: query.get("provider") ?? "",
    model: query.get("model") ?? "",
    status: query.get("status") ?? "",
  };
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

/** The time bounds of a range, as of now. */
export function bounds(f: Filters): { since?: Date; until?: Date } {
  if (f.range === "custom") {
    return { ...(f.from ? { since: new Date(f.from) } : {}), ...(f.to ? { until: new Date(f.to) } : {}) };
  }
  const span = ranges[f.range];
  return span ? { since: new Date(Date.now() - span) } : {};
}

/** The contract's TraceFilter for these filters. */
export function traceFilter(f: Filters): TraceFilter {
  const { since, until } = bounds(f);
  return create(TraceFilterSchema, {
    ...(since ? { since: timestampFromDate(since) } : {}),
    ...(until ? { until: timestampFromDate(until) } : {}),
    keyId: f.keyId,
    provider: f.provider,
    model: f.model,
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
  if (f.model) q.set("model", f.model);
  if (f.status) q.set("status", f.status);
  return q.toString();
}
