import { create } from "@bufbuild/protobuf";
import { createContextKey, type ServiceImpl } from "@connectrpc/connect";
import { TraceSchema } from "../../gen/calltrace/v1/trace_pb.js";
import { IngestResponseSchema, type TraceService } from "../../gen/calltrace/v1/trace_service_pb.js";
import type { IngestPipeline } from "./ingest-pipeline.js";

/** The client's address, put into each call's context by the server edge. */
export const clientAddressKey = createContextKey<string | undefined>(undefined, { description: "client address" });

/** TraceService for gRPC, gRPC-Web and Connect: the same pipeline the REST edge runs. */
export function traceService(pipeline: IngestPipeline): ServiceImpl<typeof TraceService> {
  return {
    async ingest(request, context) {
      const clientAddress = context.values.get(clientAddressKey);
      const admission = await pipeline.admit(context.requestHeader.get("authorization"), clientAddress);
      for (const [name, value] of Object.entries(admission.headers)) context.responseHeader.set(name, value);
      const quotaHeaders = await pipeline.accept(admission, {
        trace: request.trace ?? create(TraceSchema),
        idempotencyKey: context.requestHeader.get("idempotency-key"),
        clientAddress,
      });
      for (const [name, value] of Object.entries(quotaHeaders)) context.responseHeader.set(name, value);
      return create(IngestResponseSchema, { status: "ok" });
    },
  };
}
