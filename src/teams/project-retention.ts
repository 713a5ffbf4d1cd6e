import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { TraceFilterSchema, type TraceFilter } from "../../gen/calltrace/v1/query_pb.js";
import type { ProjectRecord } from "../store/team-store.js";

/**
 * Where the project's own retention starts (ms since the epoch), when it keeps traces for less
 * than RETENTION_DAYS (the store applies RETENTION_DAYS itself); undefined otherwise. Every read
 * starts there, so traces its sweeper has yet to delete are never read back.
 */
export function projectKeptSince(project: Pick<ProjectRecord, "retentionDays">, now = Date.now()): number | undefined {
  return project.retentionDays ? now - project.retentionDays * 86_400_000 : undefined;
}

/** A read's filter narrowed to the project's own retention (projectKeptSince). */
export function projectFilter(project: Pick<ProjectRecord, "retentionDays">, filter: TraceFilter, now = Date.now()): TraceFilter {
  const cutoff = projectKeptSince(project, now);
  if (cutoff === undefined) return filter;
  if (filter.since && timestampDate(filter.since).getTime() >= cutoff) return filter;
  return create(TraceFilterSchema, { ...filter, since: timestampFromDate(new Date(cutoff)) });
}
