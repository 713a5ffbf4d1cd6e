import { create } from "@bufbuild/protobuf";
import {
  type ExportTraceServiceResponse,
  ExportTraceServiceResponseSchema,
} from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import type { Admission, IngestPipeline } from "../ingest/ingest-pipeline.js";
import { projectCost } from "../pricing/custom-prices.js";
import type { HeaderFields } from "../limits/rate-limit-headers.js";
import { callsOf } from "./export-calls.js";
import { KeyedLock } from "./keyed-lock.js";
import type { LlmCallOptions } from "./llm-call.js";
import { oneTracePerCall } from "./one-trace-per-call.js";
import type { OtlpExport } from "./otlp-export.js";
import { UnpairedSpans } from "./unpaired-spans.js";
import type { OtlpSpanIds } from "../store/trace-store.js";

export interface OtlpIngestDeps extends Omit<LlmCallOptions, "price"> {
  pipeline: IngestPipeline;
  /** The OTLP spans stored for these OTLP trace ids of an account. */
  storedSpans(accountId: string, otlpTraceIds: string[]): Promise<OtlpSpanIds[]>;
}

/** An Export's answer: the response message and the quota headers (D11) to send with it. */
export interface OtlpExportResult {
  response: ExportTraceServiceResponse;
  headers: HeaderFields;
}

/** The reasons named in partial_success's error_message; the count covers them all. */
const maxReasons = 10;

export type OtlpIngest = (admission: Admission, request: OtlpExport, clientAddress: string | undefined) => Promise<OtlpExportResult>;

/**
 * One OTLP Export, the same for OTLP/HTTP (protobuf or JSON) and OTLP/gRPC: its LLM calls, one
 * trace each, through the ingest pipeline. Calls of the same OTLP trace are handled one Export at a
 * time (in this process), so a parent and child span arriving in two concurrent Exports are still
 * stored once. Resolves once every stored trace is committed; throws the pipeline's refusals.
 */
export function createOtlpIngest(deps: OtlpIngestDeps): OtlpIngest {
  const lock = new KeyedLock();
  const unpaired = new UnpairedSpans();
  return async (admission, request, clientAddress) => {
    const book = await deps.pipeline.priceBook(admission);
    const { calls, rejected } = callsOf(request, { ...deps, price: (usage, at) => projectCost(book, usage, at) });
    const traceIds = [...new Set(calls.map((c) => c.submission.origin.otlpTraceId))];
    const accountId = admission.key.accountId;
    const outcome = await lock.run(
      traceIds.map((id) => `${accountId}:${id}`),
      async () => {
        const stored = traceIds.length === 0 ? [] : await deps.storedSpans(accountId, traceIds);
        const once = oneTracePerCall(calls, stored, accountId, unpaired).map((c) => c.submission);
        return deps.pipeline.acceptCalls(admission, once, clientAddress).then((result) => ({ ...result, once }));
      },
    );
    const reasons = [...rejected, ...outcome.rejected.map((r) => `span ${outcome.once[r.index]!.origin.otlpSpanId}: ${r.reason}`)];
    const response = create(ExportTraceServiceResponseSchema);
    if (reasons.length > 0) {
      const more = reasons.length > maxReasons ? `; and ${reasons.length - maxReasons} more` : "";
      response.partialSuccess = {
        $typeName: "opentelemetry.proto.collector.trace.v1.ExportTracePartialSuccess",
        rejectedSpans: BigInt(reasons.length),
        errorMessage: reasons.slice(0, maxReasons).join("; ") + more,
      };
    }
    return { response, headers: outcome.headers };
  };
}
