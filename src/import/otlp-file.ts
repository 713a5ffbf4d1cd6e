import { readFile } from "node:fs/promises";
import type { JsonObject } from "@bufbuild/protobuf";
import { callTimeProblem, timestampMsChecked } from "../ingest/call-time.js";
import { storedTraceOf } from "../ingest/stored-trace.js";
import { describeProblems, traceProblems } from "../ingest/trace-validation.js";
import { callsOf } from "../otlp/export-calls.js";
import { exportFromOtlpJson } from "../otlp/otlp-json.js";
import { oneTracePerCall } from "../otlp/one-trace-per-call.js";
import { UnpairedSpans } from "../otlp/unpaired-spans.js";
import { projectCost } from "../pricing/custom-prices.js";
import type { OtlpSpanIds } from "../store/trace-store.js";
import { apiKeyStandIn, type ImportContext, type ImportItem, importKeyId } from "./import-item.js";

/**
 * The LLM calls of an OTLP JSON file (an ExportTraceServiceRequest, as a Collector's file
 * exporter or an SDK's console exporter writes it), mapped as OTLP ingest maps them: one trace
 * per call, priced by the server. Each is keyed as OTLP ingest keys it (D37, D44), so a call
 * imported twice, or imported after it arrived over OTLP, is stored once. A call is placed at its
 * span's start, which must be within D58's bounds (a span placed at the import would misplace
 * history). Spans that are no LLM call are skipped, as ingest skips them.
 */
export async function* otlpFileItems(
  path: string,
  context: ImportContext,
  storedSpans: (otlpTraceIds: string[]) => Promise<OtlpSpanIds[]>,
): AsyncGenerator<ImportItem> {
  let request: ReturnType<typeof exportFromOtlpJson>;
  try {
    request = exportFromOtlpJson(JSON.parse(await readFile(path, "utf8")) as JsonObject);
  } catch (error) {
    yield { where: "file", rejected: `not an OTLP JSON export: ${(error as Error).message}` };
    return;
  }
  const receivedAt = new Date(context.nowMs);
  const { calls, rejected } = callsOf(request, { ...context, price: (usage) => projectCost(context.book, usage, receivedAt) });
  for (const reason of rejected) yield { where: "span", rejected: reason };
  const traceIds = [...new Set(calls.map((c) => c.submission.origin.otlpTraceId))];
  const stored = traceIds.length === 0 ? [] : await storedSpans(traceIds);
  for (const { submission } of oneTracePerCall(calls, stored, context.projectId, new UnpairedSpans())) {
    const { trace, origin, idempotencyKey, otlpStartS } = submission;
    const where = `span ${origin.otlpSpanId}`;
    trace.apiKey = apiKeyStandIn;
    const problems = traceProblems(trace);
    const timeProblem = trace.calledAt
      ? callTimeProblem(timestampMsChecked(trace.calledAt), context.nowMs, context.keepDays)
      : { field: "called_at", problem: "is required (the span has no start time)" };
    if (timeProblem) problems.push(timeProblem);
    if (problems.length > 0) {
      yield { where, rejected: describeProblems(problems) };
      continue;
    }
    const receipt = { keyId: importKeyId, accountId: context.projectId, country: "", receivedAtMs: context.nowMs };
    // The import key keeps the call unique for good where the store has no rows keyed by the call (MongoDB).
    yield { where, write: { trace: storedTraceOf(trace, receipt, origin), idempotencyKey, otlpStartS, importKey: `otlp:${idempotencyKey}` } };
  }
}

