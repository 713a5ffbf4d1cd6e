import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { ExportTraceServiceResponse, TraceService } from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import type { IngestPipeline } from "../ingest/ingest-pipeline.js";
import { clientAddressKey } from "../ingest/trace-service.js";
import { exportOfMessage, type OtlpExport } from "./otlp-export.js";
import type { OtlpIngest } from "./otlp-ingest.js";

/** OTLP/gRPC's Export of an Export however it was read (by protobuf-es, or by the direct path's reader, D44). */
export type OtlpExportHandler = (request: OtlpExport, context: HandlerContext) => Promise<ExportTraceServiceResponse>;

/**
 * OTLP/gRPC's `opentelemetry.proto.collector.trace.v1.TraceService/Export`: the same admission and
 * Export handling as OTLP/HTTP, refusals as gRPC statuses (D17: UNAUTHENTICATED, RESOURCE_EXHAUSTED
 * with RetryInfo, …).
 */
export function otlpExportHandler(pipeline: IngestPipeline, ingest: OtlpIngest): OtlpExportHandler {
  return async (request, context) => {
    const clientAddress = context.values.get(clientAddressKey);
    const admission = await pipeline.admit(context.requestHeader.get("authorization"), clientAddress, false);
    for (const [name, value] of Object.entries(admission.headers)) context.responseHeader.set(name, value);
    const { response, headers } = await ingest(admission, request, clientAddress);
    for (const [name, value] of Object.entries(headers)) context.responseHeader.set(name, value);
    return response;
  };
}

/** The Export service beside calltrace.v1.TraceService on the router (gRPC-Web, Connect, JSON), read by protobuf-es. */
export function otlpTraceService(handle: OtlpExportHandler): ServiceImpl<typeof TraceService> {
  return { export: (request, context) => handle(exportOfMessage(request), context) };
}
