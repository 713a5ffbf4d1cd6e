import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { TraceFilterSchema, type TraceFilter } from "../../gen/calltrace/v1/query_pb.js";
import type { ProjectRecord } from "../store/team-store.js";

/**
 * A read's filter narrowed to the project's own retention, when it keeps traces for less than
 * RETENTION_DAYS (the store applies RETENTION_DAYS itself): traces its sweeper has yet to delete
 * are never read back.
 */
export function projectFilter(project: Pick<ProjectRecord, "retentionDays">, filter: TraceFilter, now = Date.now()): TraceFilter {
  if (!project.retentionDays) return filter;
  const cutoff = now - project.retentionDays * 86_400_000;
  if (filter.since && timestampDate(filter.since).getTime() >= cutoff) return filter;
  return create(TraceFilterSchema, { ...filter, since: timestampFromDate(new Date(cutoff)) });
}
