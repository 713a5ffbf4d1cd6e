import { connectNodeAdapter } from "@connectrpc/connect-node";
import { createContextValues } from "@connectrpc/connect";
import { TraceService } from "../../gen/calltrace/v1/trace_service_pb.js";
import type { Dashboard } from "../dashboard/dashboard.js";
import type { IngestPipeline } from "../ingest/ingest-pipeline.js";
import { clientAddressKey, traceService } from "../ingest/trace-service.js";
import type { Logger } from "../log/logger.js";
import { clientAddress } from "./client-address.js";
import { sendJson } from "./json-response.js";
import type { NodeRequest, NodeResponse } from "./node-types.js";
import { restIngest } from "./rest-ingest.js";

export interface RequestHandlerOptions {
  pipeline: IngestPipeline;
  /** Resolves when the stores can take writes (GET /readyz), with notes such as a degradation to report. */
  ready: () => Promise<Record<string, string>>;
  maxBodyBytes: number;
  trustProxy: boolean;
  logger: Logger;
  /** The web dashboard and its Connect services; without it those paths are 404. */
  dashboard?: Dashboard;
}

/** Routes one request: the REST endpoints by path, everything else to the Connect router (gRPC, gRPC-Web, Connect). */
export function createRequestHandler(options: RequestHandlerOptions) {
  const rest = restIngest(options.pipeline, options);
  const connect = connectNodeAdapter({
    routes: (router) => {
      router.service(TraceService, traceService(options.pipeline));
      options.dashboard?.routes(router);
    },
    readMaxBytes: options.maxBodyBytes,
    contextValues: (req) =>
      createContextValues().set(clientAddressKey, clientAddress(req.headers, req.socket?.remoteAddress, options.trustProxy)),
    fallback: (req, res) => {
      if (!options.dashboard?.serve(req, res)) sendJson(res, 404, { error: "Not found" });
    },
  });

  return (req: NodeRequest, res: NodeResponse): void => {
    const path = (req.url ?? "/").split("?")[0];
    const handled = (() => {
      switch (path) {
        case "/v1/traces":
          return rest(req, res);
        case "/healthz":
          return Promise.resolve(sendJson(res, 200, { status: "ok" }));
        case "/readyz":
          return options.ready().then(
            (notes) => sendJson(res, 200, { status: "ready", ...notes }),
            (error: Error) => sendJson(res, 503, { status: "unavailable", reason: error.message }),
          );
        default:
          return connect(req, res);
      }
    })();
    void Promise.resolve(handled).catch((error: unknown) => {
      options.logger.error({ err: error, path }, "request failed");
      sendJson(res, 500, { error: "Internal error" });
    });
  };
}
