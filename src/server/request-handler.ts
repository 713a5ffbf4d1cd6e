import type { Http2Session, OutgoingHttpHeaders } from "node:http2";
import { createContextValues } from "@connectrpc/connect";
import { TraceService } from "../../gen/calltrace/v1/trace_service_pb.js";
import type { Dashboard } from "../dashboard/dashboard.js";
import type { IngestPipeline } from "../ingest/ingest-pipeline.js";
import { clientAddressKey, traceService } from "../ingest/trace-service.js";
import { TraceService as OtlpTraceService } from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import { createOtlpIngest, type OtlpIngestDeps } from "../otlp/otlp-ingest.js";
import { exportDecoder } from "../otlp/otlp-protobuf.js";
import { otlpExportHandler, otlpTraceService } from "../otlp/otlp-trace-service.js";
import type { Logger } from "../log/logger.js";
import type { Metrics, RequestProtocol } from "../observability/metrics.js";
import type { HeaderFields } from "../limits/rate-limit-headers.js";
import { observedPipeline } from "../observability/observed-pipeline.js";
import { requestIdOf } from "../observability/request-id.js";
import { openApiJson } from "../openapi/openapi-document.js";
import { type ReadApi, runPathPrefix } from "../read-api/read-api.js";
import { clientAddress } from "./client-address.js";
import { serveHealth } from "./grpc-health.js";
import { serveReflection } from "./grpc-reflection.js";
import { sendJson, sendJsonText } from "./json-response.js";
import { metricsAuthorized, sendMetrics } from "./metrics-endpoint.js";
import type { NodeRequest, NodeResponse } from "./node-types.js";
import { pathOf } from "./request-path.js";
import { restIngest } from "./rest-ingest.js";
import { decodedRoute, unaryRoute } from "./direct-unary.js";
import { codeName, rpcAdapter } from "./rpc-adapter.js";
import type { StreamTaker } from "./listen.js";

export interface RequestHandlerOptions {
  pipeline: IngestPipeline;
  /** OTLP Exports (HTTP and gRPC): how their spans become calls, and the stored spans of a trace. */
  otlp: Omit<OtlpIngestDeps, "pipeline">;
  /** Resolves when the stores can take writes (GET /readyz), with notes such as a degradation to report. */
  ready: () => Promise<Record<string, string>>;
  maxBodyBytes: number;
  /** Largest OTLP Export, OTLP/HTTP and OTLP/gRPC (OTLP_MAX_BODY_BYTES); absent: maxBodyBytes. */
  otlpMaxBodyBytes?: number;
  trustProxy: boolean;
  logger: Logger;
  /** The web dashboard and its Connect services; without it those paths are 404. */
  dashboard?: Dashboard;
  /** Counts every request; without it nothing is counted. */
  metrics?: Metrics;
  /** Aborted when the server starts to shut down: long-lived RPCs (a health Watch) end then. */
  shutdown?: AbortSignal;
  /** When set, GET /metrics on this port answers requests bearing `Authorization: Bearer <token>`. */
  metricsToken?: string;
  /** GET /v1/budget (budget/budget-route.ts); without it that path is 404. */
  budget?: (req: NodeRequest, res: NodeResponse, common: HeaderFields) => Promise<void>;
  /** The fast paths' switches (DIRECT_UNARY, OTLP_READER): each on unless false. */
  directUnary?: boolean;
  otlpReader?: boolean;
}

/** Under TLS, browsers are told to keep to HTTPS for two years (HSTS). */
const hsts = "max-age=63072000; includeSubDomains";

/**
 * Routes one request: the REST endpoints by path, everything else to the RPC adapter (gRPC,
 * gRPC-Web, Connect) and from there to the dashboard. Every response carries an X-Request-Id
 * (the client's, when it sent a sane one) and is counted and logged once, with that id: at info
 * level when it was refused or failed, at debug level otherwise. Logs hold no keys and no bodies.
 */
export function createRequestHandler(options: RequestHandlerOptions) {
  const pipeline = options.metrics ? observedPipeline(options.pipeline, options.metrics) : options.pipeline;
  const otlp = createOtlpIngest({ ...options.otlp, pipeline });
  const readOtlp = exportDecoder(options.otlpReader !== false);
  const rest = restIngest(pipeline, otlp, { ...options, readOtlp });
  const otlpLimit = { readMaxBytes: options.otlpMaxBodyBytes ?? options.maxBodyBytes };
  const rpcOutcomes = new WeakMap<NodeRequest, string>();
  const ingest = traceService(pipeline);
  const otlpExport = otlpExportHandler(pipeline, otlp);
  const logRpcFailure = (requestId: unknown, error: unknown) => options.logger.error({ err: error, reqId: requestId }, "rpc failed");
  const rpc = rpcAdapter({
    routes: (router) => {
      router.service(TraceService, ingest);
      router.service(OtlpTraceService, otlpTraceService(otlpExport), otlpLimit);
      options.dashboard?.routes(router);
      serveHealth(router, { ready: options.ready });
      serveReflection(router);
    },
    // OTLP Exports on the direct path are read as OTLP/HTTP's are (D44).
    fastUnary:
      options.directUnary === false
        ? []
        : [
            unaryRoute(TraceService.method.ingest, ingest.ingest),
            { ...decodedRoute(OtlpTraceService.method.export, readOtlp, otlpExport), ...otlpLimit },
          ],
    readMaxBytes: options.maxBodyBytes,
    ...(options.shutdown ? { shutdownSignal: options.shutdown } : {}),
    contextValues: (headers, remoteAddress) =>
      createContextValues().set(clientAddressKey, clientAddress(headers, remoteAddress, options.trustProxy)),
    fallback: (req, res) => {
      if (!options.dashboard?.serve(req, res)) sendJson(res, 404, { error: "Not found" });
    },
    onOutcome: (req, code) => rpcOutcomes.set(req, code),
    onError: (_req, res, error) => logRpcFailure(res.getHeader("x-request-id"), error),
  });
  const documents = { "/openapi.json": openApiJson() };
  /** The read API lives with the dashboard's sessions and read keys; without a dashboard there is none. */
  const read = (req: NodeRequest, res: NodeResponse, common: HeaderFields, route: keyof ReadApi) => {
    if (!options.dashboard) return sendJson(res, 404, { error: "Not found" }, common);
    return options.dashboard.readApi[route](req, res, common);
  };

  /** Counts and logs a request once it is over: at info level when it was refused or failed, at debug level otherwise. */
  const record = (
    requestId: string,
    method: string | undefined,
    path: string,
    protocol: RequestProtocol,
    status: string,
    started: number,
  ) => {
    const seconds = (performance.now() - started) / 1000;
    options.metrics?.request(protocol, status, seconds);
    const level = status !== "ok" && !/^[23]\d\d$/.test(status) ? "info" : "debug";
    // Most requests log at debug, usually off: the line is not even built then.
    if (!options.logger.isLevelEnabled(level)) return;
    options.logger[level]({ reqId: requestId, method, path, protocol, status, ms: Math.round(seconds * 10_000) / 10 }, "request");
  };

  const handle = (req: NodeRequest, res: NodeResponse): void => {
    const started = performance.now();
    const requestId = requestIdOf(req.headers["x-request-id"]);
    // Every later layer (an RPC's interceptors, its log lines) reads the one id the response carries.
    req.headers["x-request-id"] = requestId;
    const common = everyResponse(requestId, req.socket);
    const path = pathOf(req.url ?? "/");
    // Every run's path is one route: its id is the read API's to check.
    const runPath = path.startsWith(runPathPrefix) ? path : undefined;
    // The REST edge writes them with its own headers, in one writeHead (json-response).
    if (!restPaths.has(path) && !runPath) for (const name in common) res.setHeader(name, common[name]!);
    const protocol = protocolOf(req, path);

    res.once("close", () => {
      const rpcCode = rpcOutcomes.get(req);
      record(requestId, req.method, path, protocol, !res.headersSent ? "aborted" : (rpcCode ?? String(res.statusCode)), started);
    });

    const handled = (() => {
      switch (path) {
        case "/v1/traces":
          if (req.method === "POST") return rest(req, res, common);
          if (req.method === "GET") return read(req, res, common, "traces");
          return sendJson(res, 405, { error: "Method not allowed" }, { ...common, allow: "GET, POST" });
        case "/v1/metrics":
        case "/v1/errors":
        case "/v1/runs":
        case runPath:
          if (req.method === "GET") return read(req, res, common, runPath ? "run" : readRoutes[path as keyof typeof readRoutes]);
          return sendJson(res, 405, { error: "Method not allowed" }, { ...common, allow: "GET" });
        case "/v1/budget":
          if (!options.budget) return sendJson(res, 404, { error: "Not found" }, common);
          if (req.method === "GET") return options.budget(req, res, common);
          return sendJson(res, 405, { error: "Method not allowed" }, { ...common, allow: "GET" });
        case "/healthz":
        case "/readyz":
        case "/openapi.json":
          if (req.method !== "GET" && req.method !== "HEAD") {
            return sendJson(res, 405, { error: "Method not allowed" }, new Headers({ allow: "GET, HEAD" }));
          }
          if (path === "/healthz") return sendJson(res, 200, { status: "ok" });
          if (path === "/openapi.json") return sendJsonText(res, 200, documents[path]);
          return options.ready().then(
            (notes) => sendJson(res, 200, { status: "ready", ...notes }),
            (error: Error) => sendJson(res, 503, { status: "unavailable", reason: error.message }),
          );
        case "/metrics":
          if (options.metrics && options.metricsToken && metricsAuthorized(req.headers.authorization, options.metricsToken)) {
            return sendMetrics(options.metrics, res);
          }
          return rpc.serve(req, res);
        default:
          return rpc.serve(req, res);
      }
    })();
    handled?.catch((error: unknown) => {
      options.logger.error({ err: error, path, reqId: requestId }, "request failed");
      sendJson(res, 500, { error: "Internal error" }, common);
    });
  };

  /**
   * The gRPC calls the direct path answers, taken from HTTP/2 before Node's compatibility layer
   * wraps them (D38), with what every response carries and the same count and log line.
   */
  const takeStream: StreamTaker = (stream, headers) => {
    const call = rpc.grpcCall(headers);
    if (!call) return undefined;
    const started = performance.now();
    const requestId = requestIdOf(headers["x-request-id"]);
    const peer = peerOf(stream.session);
    const sent: OutgoingHttpHeaders = everyResponse(requestId, peer);
    let rpcCode: string | undefined;
    stream.on("close", () => {
      const status = !stream.headersSent ? "aborted" : (rpcCode ?? String(stream.sentHeaders[":status"]));
      record(requestId, "POST", pathOf(headers[":path"] ?? "/"), "grpc", status, started);
    });
    call(stream, headers, sent, peer.remoteAddress, {
      report: (code) => (rpcCode = codeName(code)),
      onError: (error) => logRpcFailure(requestId, error),
    });
    return sent;
  };

  return Object.assign(handle, { takeStream });
}

/** What a connection's calls need of its socket: HTTP/2's socket is a Proxy, which costs every read. */
interface Peer {
  remoteAddress: string | undefined;
  encrypted: boolean;
}

const peers = new WeakMap<object, Peer>();

/** The peer of an HTTP/2 session, read from its socket once per connection. */
function peerOf(session: Http2Session | undefined): Peer {
  if (!session) return { remoteAddress: undefined, encrypted: false };
  let peer = peers.get(session);
  if (!peer) {
    const socket = session.socket as { remoteAddress?: string; encrypted?: boolean } | undefined;
    peer = { remoteAddress: socket?.remoteAddress, encrypted: socket?.encrypted === true };
    peers.set(session, peer);
  }
  return peer;
}

/** The headers every response carries, on every path: its request id, nosniff, and HSTS under TLS. */
function everyResponse(requestId: string, socket: unknown): HeaderFields {
  const headers: HeaderFields = { "x-request-id": requestId, "x-content-type-options": "nosniff" };
  if ((socket as { encrypted?: boolean } | undefined)?.encrypted) headers["strict-transport-security"] = hsts;
  return headers;
}

/** The read API's routes by path (besides GET /v1/traces and each run's path). */
const readRoutes = { "/v1/metrics": "metrics", "/v1/errors": "errors", "/v1/runs": "runs" } as const;

/** The REST API's paths (and each run's): their responses carry the common headers in their own writeHead. */
const restPaths = new Set(["/v1/traces", "/v1/budget", ...Object.keys(readRoutes)]);

/** Which protocol a request speaks, from its path and content type (for metrics and logs). */
function protocolOf(req: NodeRequest, path: string): RequestProtocol {
  if (restPaths.has(path) || path.startsWith(runPathPrefix)) return "rest";
  const contentType = String(req.headers["content-type"] ?? "").toLowerCase();
  if (contentType.startsWith("application/grpc-web")) return "grpc-web";
  if (contentType.startsWith("application/grpc")) return "grpc";
  if (req.method === "POST" && /^\/[\w.]+\/\w+$/.test(path) && /^application\/(connect\+)?(json|proto)/.test(contentType)) return "connect";
  return "http";
}
