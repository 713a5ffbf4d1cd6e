import { fromJson, type JsonObject } from "@bufbuild/protobuf";
import { StoredTraceSchema, type StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import { callTimeProblem, timestampMsChecked } from "../ingest/call-time.js";
import { traceFromJson } from "../ingest/trace-json.js";
import { describeProblems, type FieldProblem, submissionProblems } from "../ingest/trace-validation.js";
import type { TraceWrite } from "../store/trace-store.js";
import { fastExportedRow } from "./exported-row-fast.js";
import { apiKeyStandIn, type ImportContext } from "./import-item.js";

/**
 * A row that `traces export` wrote (StoredTrace with its field names), as a write into the
 * project, or why not. The contract's fields are checked by the API's own reader and rules, so a
 * row is refused with the messages a POST of it would get; its place in time (its call time, else
 * its receipt) by the bounds of D58. The row keeps its receipt, key, country and prices, so the
 * dashboard reads the same figures; its exported id makes it the same trace when imported again.
 */
export function exportedRowWrite(row: JsonObject, context: ImportContext): TraceWrite | string {
  return (context.fastExportedRows && fastRowWrite(row, context)) || checkedRowWrite(row, context);
}

/**
 * The fast path (IMPORT_FAST_PATH): the row read in one pass (exported-row-fast.ts), written when
 * the API's rules and the call-time bounds find nothing wrong; undefined otherwise, for the
 * generic path to read the row again and word what is wrong.
 */
function fastRowWrite(row: JsonObject, context: ImportContext): TraceWrite | undefined {
  const read = fastExportedRow(row);
  if (!read) return undefined;
  read.trace.apiKey = apiKeyStandIn;
  if (submissionProblems(read.trace).length > 0 || placeProblem(read.stored, context)) return undefined;
  return write(read.stored, row, context);
}

function checkedRowWrite(row: JsonObject, context: ImportContext): TraceWrite | string {
  const { trace, problems: decodeProblems } = traceFromJson({ ...row, api_key: apiKeyStandIn });
  const problems = submissionProblems(trace, decodeProblems);
  let stored: StoredTrace;
  try {
    stored = fromJson(StoredTraceSchema, row, { ignoreUnknownFields: true });
  } catch (error) {
    return problems.length > 0 ? describeProblems(problems) : (error as Error).message;
  }
  const problem = placeProblem(stored, context);
  if (problem) problems.push(problem);
  if (problems.length > 0) return describeProblems(problems);
  return write(stored, row, context);
}

/** What is wrong with the trace's place in time: no receipt, or its call time (else its receipt) out of D58's bounds. */
function placeProblem(stored: StoredTrace, context: ImportContext): FieldProblem | undefined {
  if (!stored.receivedAt) return { field: "received_at", problem: "is required" };
  const [field, at] = stored.calledAt ? ["called_at", stored.calledAt] : ["received_at", stored.receivedAt];
  return callTimeProblem(timestampMsChecked(at), context.nowMs, context.keepDays, field);
}

/** The write of a row's trace into the project, keyed by its exported id. */
function write(stored: StoredTrace, row: JsonObject, context: ImportContext): TraceWrite {
  const exportedId = typeof row.id === "string" && row.id !== "" ? row.id : undefined;
  stored.id = "";
  stored.accountId = context.projectId;
  return { trace: stored, idempotencyKey: undefined, importKey: exportedId && `id:${exportedId}` };
}
