import type { ServiceImpl } from "@connectrpc/connect";
import type { TraceService } from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import type { IngestPipeline } from "../ingest/ingest-pipeline.js";
import { clientAddressKey } from "../ingest/trace-service.js";
import { exportOfMessage } from "./otlp-export.js";
import type { OtlpIngest } from "./otlp-ingest.js";

/**
 * OTLP/gRPC's `opentelemetry.proto.collector.trace.v1.TraceService/Export`, beside
 * calltrace.v1.TraceService on the same router: the same admission and Export handling as
 * OTLP/HTTP, refusals as gRPC statuses (D17: UNAUTHENTICATED, RESOURCE_EXHAUSTED with RetryInfo, …).
 */
export function otlpTraceService(pipeline: IngestPipeline, ingest: OtlpIngest): ServiceImpl<typeof TraceService> {
  return {
    async export(request, context) {
      const clientAddress = context.values.get(clientAddressKey);
      const admission = await pipeline.admit(context.requestHeader.get("authorization"), clientAddress, false);
      for (const [name, value] of Object.entries(admission.headers)) context.responseHeader.set(name, value);
      const { response, headers } = await ingest(admission, exportOfMessage(request), clientAddress);
      for (const [name, value] of Object.entries(headers)) context.responseHeader.set(name, value);
      return response;
    },
  };
}
