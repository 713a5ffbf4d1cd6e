import type { IncomingHttpHeaders } from "node:http2";
import { Code, type ConnectRouter, type ConnectRouterOptions, type ContextValues, createConnectRouter } from "@connectrpc/connect";
import {
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { answerUnimplemented } from "./grpc-unimplemented.js";
import { directUnary, type UnaryRoute } from "./direct-unary.js";
import type { NodeRequest, NodeResponse } from "./node-types.js";
import { pathOf } from "./request-path.js";

export interface RpcAdapterOptions extends ConnectRouterOptions {
  routes: (router: ConnectRouter) => void;
  contextValues: (headers: IncomingHttpHeaders, remoteAddress: string | undefined) => ContextValues;
  /** Paths that are no RPC. */
  fallback: (req: NodeRequest, res: NodeResponse) => void;
  /** Told each RPC's outcome as a code name (`ok`, `invalid_argument`, …) before its response is written. */
  onOutcome?: (req: NodeRequest, code: string) => void;
  /** Told when a handler fails outside any RPC status (a write error, a bug). */
  onError?: (req: NodeRequest, res: NodeResponse, error: unknown) => void;
  /**
   * Unary methods also registered in `routes` whose gRPC and Connect calls in the protobuf encoding
   * are answered directly (direct-unary.ts): the ingest paths. Ignored when `interceptors` are given.
   */
  fastUnary?: UnaryRoute[];
}

/**
 * connectNodeAdapter's job (gRPC, gRPC-Web and Connect on Node requests), plus two things it
 * cannot do: it reports each RPC's status code, and a request body that does not decode as the
 * method's protobuf message (or is flagged compressed without an encoding) is INVALID_ARGUMENT, the
 * client's fault, where connect-es (like grpc-go) says INTERNAL, which would read as a server fault (a 500 on the Connect protocol).
 */
export function rpcAdapter(options: RpcAdapterOptions) {
  const acceptCompression = [compressionGzip, compressionBrotli];
  const router = createConnectRouter({ acceptCompression, ...options });
  options.routes(router);
  const paths = new Map<string, UniversalHandler>(router.handlers.map((h) => [h.requestPath, h]));
  // Router interceptors wrap connect-es's handlers only: with any, every call goes through them.
  const fastUnary = options.interceptors?.length ? [] : (options.fastUnary ?? []);
  const direct = new Map(
    fastUnary.map((route) => [
      `/${route.method.parent.typeName}/${route.method.name}`,
      directUnary(route, {
        acceptCompression,
        readMaxBytes: route.readMaxBytes ?? options.readMaxBytes ?? 0xffffffff,
        contextValues: options.contextValues,
        ...(options.maxTimeoutMs === undefined ? {} : { maxTimeoutMs: options.maxTimeoutMs }),
        ...(options.shutdownSignal ? { shutdownSignal: options.shutdownSignal } : {}),
      }),
    ]),
  );

  /** Requests on Node's request and response: everything but the direct gRPC calls. */
  function serve(req: NodeRequest, res: NodeResponse): void {
    const path = pathOf(req.url);
    const directly = direct.get(path);
    if (directly && req.method === "POST" && contentTypeOf(req.headers) === "application/proto") {
      directly.connect(req, res, {
        report: (code) => options.onOutcome?.(req, codeName(code)),
        onError: (error) => options.onError?.(req, res, error),
      });
      return;
    }
    const handler = paths.get(path);
    if (!handler) {
      // A gRPC client calling a method we do not have is told so in gRPC's terms.
      const contentType = contentTypeOf(req.headers);
      if (contentType.startsWith("application/grpc")) {
        options.onOutcome?.(req, codeName(Code.Unimplemented));
        answerUnimplemented(res, contentType, path);
      } else options.fallback(req, res);
      return;
    }
    const report = (code: string) => options.onOutcome?.(req, code);
    const uReq = universalRequestFromNodeRequest(req, res, undefined, options.contextValues(req.headers, req.socket?.remoteAddress));
    handler(uReq)
      .then((uRes) => universalResponseToNodeResponse(observed(uRes, contentTypeOf(req.headers), report), res))
      .catch((reason: unknown) => {
        if (reason instanceof Error && reason.name === "ConnectError" && (reason as { code?: Code }).code === Code.Aborted) return;
        options.onError?.(req, res, reason);
      });
  }

  /**
   * The direct gRPC call an HTTP/2 stream's request headers ask for, answered on the raw stream
   * (D38): POST to a direct method in the protobuf encoding, with no `Expect` (which Node's
   * compatibility layer answers). Undefined for every other request.
   */
  function grpcCall(headers: IncomingHttpHeaders) {
    if (headers[":method"] !== "POST" || headers.expect !== undefined) return undefined;
    const contentType = contentTypeOf(headers);
    if (contentType !== "application/grpc" && contentType !== "application/grpc+proto") return undefined;
    return direct.get(pathOf(headers[":path"]))?.grpc;
  }

  return { serve, grpcCall };
}

function contentTypeOf(headers: IncomingHttpHeaders): string {
  const value = headers["content-type"];
  return (Array.isArray(value) ? value[0] : value)?.toLowerCase() ?? "";
}

/**
 * connect-es's words for a request body that is not the method's message, or an envelope flagged
 * compressed with no encoding to undo it: both the client's fault.
 */
const undecodable = /^(parse binary: |received compressed envelope, but do not know how to decompress)/;

function observed(uRes: UniversalServerResponse, contentType: string, report: (code: string) => void): UniversalServerResponse {
  if (contentType.startsWith("application/grpc-web")) return { ...uRes, body: grpcWebBody(uRes.body, report) };
  if (contentType.startsWith("application/grpc")) {
    const trailer = uRes.trailer;
    const settle = () => {
      if (!trailer) return report(uRes.status === 200 ? "ok" : `http_${uRes.status}`);
      if (trailer.get("grpc-status") === String(Code.Internal) && undecodable.test(decodeGrpcMessage(trailer.get("grpc-message")))) {
        trailer.set("grpc-status", String(Code.InvalidArgument));
      }
      report(codeName(Number(trailer.get("grpc-status") ?? Code.Unknown)));
    };
    return { ...uRes, body: afterLast(uRes.body, settle) };
  }
  return connectUnary(uRes, report);
}

/** Connect unary: an error is a JSON body `{code, message}` with a matching HTTP status. */
function connectUnary(uRes: UniversalServerResponse, report: (code: string) => void): UniversalServerResponse {
  if (uRes.status === 200) {
    report("ok");
    return uRes;
  }
  const body = uRes.body;
  // universalResponseToNodeResponse reads the status after the body's first chunk, so the
  // generator below may still change it.
  const out: UniversalServerResponse = { ...uRes };
  out.body = (async function* () {
    const chunks: Uint8Array[] = [];
    if (body) for await (const chunk of body as AsyncIterable<Uint8Array>) chunks.push(chunk);
    let bytes = Buffer.concat(chunks);
    let code = `http_${uRes.status}`;
    try {
      const error = JSON.parse(bytes.toString("utf8")) as { code?: string; message?: string };
      code = error.code ?? code;
      if (error.code === "internal" && undecodable.test(error.message ?? "")) {
        code = "invalid_argument";
        bytes = Buffer.from(JSON.stringify({ ...error, code }));
        out.status = 400;
        out.header?.set("content-length", String(bytes.length));
      }
    } catch {
      // compressed or not JSON: reported by its HTTP status
    }
    report(code);
    yield bytes;
  })();
  return out;
}

/** gRPC-Web carries the status in a trailer frame (flag 0x80) at the end of the body. */
function grpcWebBody(body: UniversalServerResponse["body"], report: (code: string) => void): UniversalServerResponse["body"] {
  if (!body) return body;
  return (async function* () {
    let reported = false;
    for await (const chunk of body as AsyncIterable<Uint8Array>) {
      const bytes = Buffer.from(chunk);
      if (bytes.length >= 5 && bytes[0]! & 0x80 && bytes.readUInt32BE(1) === bytes.length - 5) {
        const text = bytes.subarray(5).toString("latin1");
        const status = /^grpc-status: ?(\d+)\r?$/m.exec(text)?.[1];
        const message = /^grpc-message: ?(.*?)\r?$/m.exec(text)?.[1];
        if (status === String(Code.Internal) && undecodable.test(decodeGrpcMessage(message ?? null))) {
          const rewritten = Buffer.from(text.replace(/^grpc-status: ?13/m, `grpc-status: ${Code.InvalidArgument}`), "latin1");
          const head = Buffer.alloc(5);
          head[0] = bytes[0]!;
          head.writeUInt32BE(rewritten.length, 1);
          report(codeName(Code.InvalidArgument));
          reported = true;
          yield Buffer.concat([head, rewritten]);
          continue;
        }
        if (status !== undefined) {
          report(codeName(Number(status)));
          reported = true;
        }
      }
      yield chunk;
    }
    if (!reported) report("unknown");
  })();
}

function afterLast(body: UniversalServerResponse["body"], settle: () => void): UniversalServerResponse["body"] {
  if (!body) {
    settle();
    return body;
  }
  return (async function* () {
    yield* body as AsyncIterable<Uint8Array>;
    settle();
  })();
}

function decodeGrpcMessage(value: string | null): string {
  if (!value) return "";
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** `InvalidArgument` → `invalid_argument`; 0 → `ok`. */
export function codeName(code: number): string {
  if (code === 0) return "ok";
  const name = Code[code];
  return name ? name.replace(/[A-Z]/g, (c, at: number) => (at ? "_" : "") + c.toLowerCase()) : `code_${code}`;
}
