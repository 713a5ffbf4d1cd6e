import { fromJson, type JsonObject } from "@bufbuild/protobuf";
import { StoredTraceSchema, type StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import { callTimeProblem, timestampMsChecked } from "../ingest/call-time.js";
import { traceFromJson } from "../ingest/trace-json.js";
import { describeProblems, submissionProblems } from "../ingest/trace-validation.js";
import type { TraceWrite } from "../store/trace-store.js";
import { apiKeyStandIn, type ImportContext } from "./import-item.js";

/**
 * A row that `traces export` wrote (StoredTrace with its field names), as a write into the
 * project, or why not. The contract's fields are checked by the API's own reader and rules, so a
 * row is refused with the messages a POST of it would get; its place in time (its call time, else
 * its receipt) by the bounds of D58. The row keeps its receipt, key, country and prices, so the
 * dashboard reads the same figures; its exported id makes it the same trace when imported again.
 */
export function exportedRowWrite(row: JsonObject, context: ImportContext): TraceWrite | string {
  const { trace, problems: decodeProblems } = traceFromJson({ ...row, api_key: apiKeyStandIn });
  const problems = submissionProblems(trace, decodeProblems);
  let stored: StoredTrace;
  try {
    stored = fromJson(StoredTraceSchema, row, { ignoreUnknownFields: true });
  } catch (error) {
    return problems.length > 0 ? describeProblems(problems) : (error as Error).message;
  }
  if (!stored.receivedAt) problems.push({ field: "received_at", problem: "is required" });
  else {
    const [field, at] = stored.calledAt ? ["called_at", stored.calledAt] : ["received_at", stored.receivedAt];
    const problem = callTimeProblem(timestampMsChecked(at), context.nowMs, context.keepDays, field);
    if (problem) problems.push(problem);
  }
  if (problems.length > 0) return describeProblems(problems);
  const exportedId = typeof row.id === "string" && row.id !== "" ? row.id : undefined;
  stored.id = "";
  stored.accountId = context.projectId;
  return { trace: stored, idempotencyKey: undefined, importKey: exportedId && `id:${exportedId}` };
}
