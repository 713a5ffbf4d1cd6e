import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { TraceFilter } from "../../gen/calltrace/v1/query_pb.js";
import { filterFromQuery, filterParams } from "../dashboard/trace-download.js";
import type { GroupDimension } from "../store/group-dimension.js";
import { maxRunId, parseRunId } from "../store/run-id.js";
import type { RunsAfter } from "../store/run-summary.js";
import { decodeRunCursor } from "./run-cursor.js";

/** A query the read API cannot answer; its message names the parameter and what is wrong (400). */
export class ReadQueryError extends Error {}

/** Traces per page of GET /v1/traces: the most ListTraces answers, and the default. */
export const maxTracesPerPage = 500;
const defaultTracesPerPage = 100;
/** Groups per answer of GET /v1/metrics: the most GetUsageByGroup answers, and the default. */
export const maxGroups = 1000;
/** Error groups per answer of GET /v1/errors and runs per page of GET /v1/runs: the most the RPCs answer (50 when absent, as there). */
export const maxErrorGroups = 200;
export const maxRunsPerPage = 500;
const defaultErrorGroups = 50;
const defaultRunsPerPage = 50;
/** The longest runs cursor taken: it names a session id of up to 256 characters of UTF-8. */
const maxRunCursor = 2048;

export interface TracesQuery {
  filter: TraceFilter;
  pageSize: number;
  cursor: string | undefined;
}

export interface MetricsQuery {
  filter: TraceFilter;
  /** Absent: one total row. */
  groupBy: GroupDimension | { kind: "day" } | undefined;
  limit: number;
}

export interface ErrorsQuery {
  filter: TraceFilter;
  limit: number;
}

export interface RunsQuery {
  filter: TraceFilter;
  pageSize: number;
  after: RunsAfter | undefined;
}

/** `GET /v1/traces?from&to&<filters>&cursor&limit&project`. */
export function tracesQuery(query: URLSearchParams): TracesQuery {
  rejectUnknown(query, ["cursor", "limit"]);
  const cursor = cursorParam(query, 512);
  return { filter: readFilter(query), pageSize: count(query, "limit", defaultTracesPerPage, maxTracesPerPage), cursor };
}

/** `GET /v1/errors?from&to&<filters>&limit&project`. */
export function errorsQuery(query: URLSearchParams): ErrorsQuery {
  rejectUnknown(query, ["limit"]);
  return { filter: readFilter(query), limit: count(query, "limit", defaultErrorGroups, maxErrorGroups) };
}

/** `GET /v1/runs?from&to&<filters>&cursor&limit&project`. */
export function runsQuery(query: URLSearchParams): RunsQuery {
  rejectUnknown(query, ["cursor", "limit"]);
  const cursor = cursorParam(query, maxRunCursor);
  return {
    filter: readFilter(query),
    pageSize: count(query, "limit", defaultRunsPerPage, maxRunsPerPage),
    after: cursor === undefined ? undefined : decodeRunCursor(cursor),
  };
}

/** `GET /v1/runs/{id}?project`: the run id of the path, as GetRun takes it. */
export function runQuery(encodedId: string, query: URLSearchParams): string {
  rejectUnknown(query, [], false);
  let id: string | undefined;
  try {
    id = decodeURIComponent(encodedId);
  } catch {
    // A malformed escape is refused below, as any other id that is not one.
  }
  if (id === undefined || id.length > maxRunId || !parseRunId(id)) {
    throw new ReadQueryError("the run id must be otlp:<32 lower-case hex digits> or session:<session id>, URL-encoded in the path");
  }
  return id;
}

/** `GET /v1/metrics?from&to&<filters>&group_by&limit&project`. */
export function metricsQuery(query: URLSearchParams): MetricsQuery {
  rejectUnknown(query, ["group_by", "limit"]);
  return { filter: readFilter(query), groupBy: groupBy(single(query, "group_by")), limit: count(query, "limit", maxGroups, maxGroups) };
}

/** What `group_by` may name besides `metadata.<key>`. */
export const groupByNames = ["model", "provider", "key", "day", "user", "session", "tag", "environment", "service"] as const;

function groupBy(value: string | undefined): MetricsQuery["groupBy"] {
  if (value === undefined) return undefined;
  if (value.startsWith("metadata.")) {
    const key = value.slice("metadata.".length);
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(key)) {
      throw new ReadQueryError("group_by: metadata.<key> needs a key of 1 to 64 of A-Z a-z 0-9 _ . -");
    }
    return { kind: "metadata", key };
  }
  if (!(groupByNames as readonly string[]).includes(value)) {
    throw new ReadQueryError(`group_by must be one of ${groupByNames.join(", ")} or metadata.<key>, got ${JSON.stringify(value)}`);
  }
  return { kind: value as (typeof groupByNames)[number] };
}

/** The dashboard's filter (filterFromQuery), its time range named `from` and `to` here. */
function readFilter(query: URLSearchParams): TraceFilter {
  const from = time(query, "from");
  const to = time(query, "to");
  if (from && to && from.getTime() > to.getTime()) throw new ReadQueryError("from must not be after to");
  try {
    const filter = filterFromQuery(query);
    if (from) filter.since = timestampFromDate(from);
    if (to) filter.until = timestampFromDate(to);
    return filter;
  } catch (error) {
    throw new ReadQueryError((error as Error).message);
  }
}

/** The parameters a read route takes: its own, the project, and (unless `filtered` is false) the range and the dashboard's filters. */
function rejectUnknown(query: URLSearchParams, own: string[], filtered = true): void {
  const known = new Set([...own, ...(filtered ? ["from", "to"] : []), "project", ...(filtered ? filterParams : [])]);
  for (const name of new Set(query.keys())) {
    if (!known.has(name) && !(filtered && name.startsWith("meta."))) {
      const takes = `${[...known].join(", ")}${filtered ? " and meta.<key>" : ""}`;
      throw new ReadQueryError(`unknown parameter ${JSON.stringify(name)}; this route takes ${takes}`);
    }
    if (name !== "tag" && query.getAll(name).length > 1) throw new ReadQueryError(`${name} is given more than once`);
  }
}

function single(query: URLSearchParams, name: string): string | undefined {
  return query.get(name) ?? undefined;
}

/** An opaque cursor as a previous page handed it out; its contents are the route's to check. */
function cursorParam(query: URLSearchParams, maxLength: number): string | undefined {
  const cursor = single(query, "cursor");
  if (cursor !== undefined && (cursor === "" || cursor.length > maxLength)) throw new ReadQueryError("cursor is not valid");
  return cursor;
}

function count(query: URLSearchParams, name: string, fallback: number, max: number): number {
  const value = single(query, name);
  if (value === undefined) return fallback;
  if (!/^\d{1,7}$/.test(value) || Number(value) < 1 || Number(value) > max) {
    throw new ReadQueryError(`${name} must be a whole number from 1 to ${max}, got ${JSON.stringify(value)}`);
  }
  return Number(value);
}

const rfc3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * An RFC 3339 date-time (a zone required), checked field by field: 2026-02-30 is refused, not
 * rolled over as Date would. A leap second (:60) reads as the next second.
 */
function time(query: URLSearchParams, name: string): Date | undefined {
  const value = single(query, name);
  if (value === undefined) return undefined;
  const m = rfc3339.exec(value);
  const [year, month, day, hour, minute, second] = (m ?? []).slice(1, 7).map(Number) as number[];
  const leap = second === 60;
  // setUTCFullYear, unlike Date.UTC, takes years 0-99 as they are.
  const calendar = new Date(0);
  calendar.setUTCFullYear(year!, month! - 1, day!);
  calendar.setUTCHours(hour!, minute!, leap ? 59 : second!);
  const valid =
    m !== null &&
    calendar.getUTCFullYear() === year &&
    calendar.getUTCMonth() === month! - 1 &&
    calendar.getUTCDate() === day &&
    calendar.getUTCHours() === hour &&
    calendar.getUTCMinutes() === minute &&
    (leap || calendar.getUTCSeconds() === second) &&
    validOffset(m[8]!);
  if (!valid) throw new ReadQueryError(`${name} must be an RFC 3339 date-time such as 2026-01-31T00:00:00Z, got ${JSON.stringify(value)}`);
  const date = new Date(leap ? value.replace(/:60(?=[.Zz+-])/, ":59") : value);
  if (Number.isNaN(date.getTime())) throw new ReadQueryError(`${name} is out of range: ${JSON.stringify(value)}`);
  return leap ? new Date(date.getTime() + 1000) : date;
}

function validOffset(zone: string): boolean {
  if (zone === "Z" || zone === "z") return true;
  const [hours, minutes] = zone.slice(1).split(":").map(Number) as [number, number];
  return hours <= 23 && minutes <= 59;
}
