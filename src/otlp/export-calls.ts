import type { ExportTraceServiceRequest } from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import { type LlmCallOptions, llmCallOf, type SpanCall } from "./llm-call.js";
import { attributesOf, textOf } from "./span-attributes.js";

/** The LLM calls of one Export, and why each LLM span that cannot be stored was rejected. */
export interface ExportCalls {
  calls: SpanCall[];
  rejected: string[];
}

/** Every span of the Export, mapped; spans that are no LLM call are left out silently. */
export function callsOf(request: ExportTraceServiceRequest, options: LlmCallOptions): ExportCalls {
  const calls: SpanCall[] = [];
  const rejected: string[] = [];
  for (const resourceSpans of request.resourceSpans) {
    const attributes = attributesOf(resourceSpans.resource?.attributes);
    const resource = { attributes, serviceName: textOf(attributes, "service.name") ?? "" };
    for (const scopeSpans of resourceSpans.scopeSpans) {
      const scope = scopeSpans.scope?.name ?? "";
      for (const span of scopeSpans.spans) {
        const verdict = llmCallOf(span, scope, resource, options);
        if (verdict.kind === "call") calls.push(verdict.call);
        else if (verdict.kind === "reject") rejected.push(verdict.reason);
      }
    }
  }
  return { calls, rejected };
}
