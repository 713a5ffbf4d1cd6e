import type { OtlpSpanIds } from "../store/trace-store.js";
import type { SpanCall } from "./llm-call.js";
import type { UnpairedSpans } from "./unpaired-spans.js";

/**
 * One call, one trace. Instrumentations report some calls in more than one span, each with usage:
 * - nested: a span around the provider SDK's span (OpenLLMetry's, a framework's), parent and
 *   child. The outermost is kept; a call whose parent or child span is stored already (from an
 *   earlier Export) is that same call and is left out;
 * - side by side: the anthropic SDK's own `anthropic.messages.create` beside OpenLLMetry's
 *   `anthropic.chat`, in different traces or as siblings. With a response id both share it (the
 *   idempotency key is made from it, so the first stored wins, in this Export or a later one);
 *   without one (a failed call) spans of different instrumentation scopes with the same provider,
 *   model and outcome whose times overlap are paired up, one trace per pair, within this Export
 *   and against the calls without a response id of the last minutes (`unpaired`).
 * In every case the first span of the Export is kept (the SDK's span ends, and is exported, first).
 */
export function oneTracePerCall(calls: SpanCall[], stored: OtlpSpanIds[], accountId: string, unpaired: UnpairedSpans): SpanCall[] {
  const spanKey = (traceId: string, spanId: string) => `${traceId}:${spanId}`;
  const inExport = new Set(calls.map(({ submission: { origin } }) => spanKey(origin.otlpTraceId, origin.otlpSpanId)));
  const storedSpans = new Set(stored.map((s) => spanKey(s.otlpTraceId, s.otlpSpanId)));
  const storedParents = new Set(stored.filter((s) => s.otlpParentSpanId !== "").map((s) => spanKey(s.otlpTraceId, s.otlpParentSpanId)));
  const nested = ({ submission: { origin } }: SpanCall) => {
    const parent = spanKey(origin.otlpTraceId, origin.otlpParentSpanId);
    if (origin.otlpParentSpanId !== "" && (inExport.has(parent) || storedSpans.has(parent))) return true;
    return storedParents.has(spanKey(origin.otlpTraceId, origin.otlpSpanId));
  };

  const kept: SpanCall[] = [];
  const keys = new Set<string>();
  for (const call of calls) {
    if (nested(call) || keys.has(call.submission.idempotencyKey)) continue;
    if (call.responseId === undefined && unpaired.pairOrRecord(accountId, call)) continue;
    keys.add(call.submission.idempotencyKey);
    kept.push(call);
  }
  return kept;
}
