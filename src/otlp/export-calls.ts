import { type LlmCallOptions, llmCallOf, type SpanCall } from "./llm-call.js";
import type { OtlpExport } from "./otlp-export.js";
import { textOf } from "./attribute-values.js";
import { bounds, cut } from "./string-bounds.js";

/** The LLM calls of one Export, and why each LLM span that cannot be stored was rejected. */
export interface ExportCalls {
  calls: SpanCall[];
  rejected: string[];
}

/** Every span of the Export, mapped; spans that are no LLM call are left out silently. */
export function callsOf(request: OtlpExport, options: LlmCallOptions): ExportCalls {
  const calls: SpanCall[] = [];
  const rejected: string[] = [];
  for (const { attributes, scopeSpans } of request) {
    const resource = { attributes, serviceName: cut(textOf(attributes, "service.name") ?? "", bounds.serviceName) };
    for (const { scope: scopeName, spans } of scopeSpans) {
      const scope = cut(scopeName, bounds.scope);
      for (const span of spans) {
        const verdict = llmCallOf(span, scope, resource, options);
        if (verdict.kind === "call") calls.push(verdict.call);
        else if (verdict.kind === "reject") rejected.push(verdict.reason);
      }
    }
  }
  return { calls, rejected };
}
