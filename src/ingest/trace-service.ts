import { create } from "@bufbuild/protobuf";
import { ConnectError, createContextKey, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { IngestResponseSchema, type TraceService } from "../../gen/calltrace/v1/trace_service_pb.js";
import { validationFailed } from "./ingest-errors.js";
import type { IngestPipeline } from "./ingest-pipeline.js";

/** The client's address, put into each call's context by the server edge. */
export const clientAddressKey = createContextKey<string | undefined>(undefined, { description: "client address" });

/** TraceService for gRPC, gRPC-Web and Connect: the same pipeline the REST edge runs. */
export function traceService(pipeline: IngestPipeline): ServiceImpl<typeof TraceService> {
  return {
    async ingest(request, context) {
      try {
        const clientAddress = context.values.get(clientAddressKey);
        const admission = await pipeline.admit(context.requestHeader.get("authorization"), clientAddress);
        for (const [name, value] of Object.entries(admission.headers)) context.responseHeader.set(name, value);
        if (!request.trace) {
          await pipeline.abandon(admission);
          throw validationFailed([{ field: "trace", problem: "is required" }]);
        }
        const quotaHeaders = await pipeline.accept(admission, {
          trace: request.trace,
          idempotencyKey: context.requestHeader.get("idempotency-key"),
          clientAddress,
        });
        for (const [name, value] of Object.entries(quotaHeaders)) context.responseHeader.set(name, value);
        return create(IngestResponseSchema, { status: "ok" });
      } catch (error) {
        throw asResponseHeaders(error, context);
      }
    },
  };
}

/**
 * A refusal's figures (x-ratelimit-*, x-quota-*, retry-after) go out as response headers, as on a
 * success and as the README promises, not as gRPC trailers where connect-es puts error metadata.
 */
function asResponseHeaders(error: unknown, context: HandlerContext): unknown {
  if (!(error instanceof ConnectError)) return error;
  for (const [name, value] of error.metadata) context.responseHeader.set(name, value);
  for (const name of [...error.metadata.keys()]) error.metadata.delete(name);
  return error;
}
