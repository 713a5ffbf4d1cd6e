import type Database from "better-sqlite3";
import type { OtlpSpanIds, TraceStore } from "../trace-store.js";
import { numberOf } from "./sqlite-id-numbers.js";

/** TraceStore.otlpSpans on the embedded store: one read through the (account, OTLP trace id) index. */
export function sqliteOtlpSpans(db: Database.Database): TraceStore["otlpSpans"] {
  const statement = db.prepare(
    `SELECT otlp_trace_id AS otlpTraceId, otlp_span_id AS otlpSpanId, COALESCE(otlp_parent_span_id, '') AS otlpParentSpanId
     FROM traces WHERE project_num = ${numberOf("?")} AND otlp_trace_id IN (SELECT value FROM json_each(?))`,
  );
  return async (accountId, otlpTraceIds) => statement.all(accountId, JSON.stringify(otlpTraceIds)) as OtlpSpanIds[];
}
