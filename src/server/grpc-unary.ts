import {
  create,
  type DescMessage,
  type DescMethodUnary,
  fromBinary,
  type Message,
  type MessageInitShape,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf";
import { Code, ConnectError, type ContextValues, type HandlerContext } from "@connectrpc/connect";
import { type Compression, compressionNegotiate, encodeEnvelope, envelopeDecompress } from "@connectrpc/connect/protocol";
import { parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import type { NodeRequest, NodeResponse } from "./node-types.js";

/** A unary method and its implementation (the one registered on the router), types erased. */
export interface UnaryRoute {
  method: DescMethodUnary;
  impl: (request: Message, context: HandlerContext) => Promise<Message>;
}

export function unaryRoute<I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  impl: (request: MessageShape<I>, context: HandlerContext) => Promise<MessageInitShape<O>> | MessageInitShape<O>,
): UnaryRoute {
  return {
    method: method as unknown as DescMethodUnary,
    impl: async (request, context) => create(method.output, await impl(request as MessageShape<I>, context)),
  };
}

export interface GrpcUnaryOptions {
  acceptCompression: Compression[];
  /** Largest message, after decompression (MAX_BODY_BYTES). */
  readMaxBytes: number;
  contextValues: (req: NodeRequest) => ContextValues;
  /** Told the call's status code (0 for OK). */
  report: (req: NodeRequest, code: Code | 0) => void;
  /** Told of an error outside any RPC status (a bug in an implementation). */
  onError: (req: NodeRequest, res: NodeResponse, error: unknown) => void;
}

/** gRPC's binary content types (the JSON flavour goes the general way). */
export function isGrpcProto(contentType: string): boolean {
  return contentType === "application/grpc" || contentType === "application/grpc+proto";
}

/** A signal that never aborts: these implementations read none, and one per call would cost an AbortController. */
const neverAborted = new AbortController().signal;

/**
 * Unary gRPC calls in the protobuf encoding over HTTP/2, answered directly on the Node request
 * and response: connect-es's general handler reads and writes every call through chains of async
 * iterables, with a linked AbortController and a DOMException per call, which cost several times
 * what our ingest pipeline does. Same wire behaviour as connect-es for these calls: the same
 * envelope checks and refusals (message size from the envelope header, a missing or second
 * message, an unknown or missing compression), grpc-timeout parsed, compression negotiated the
 * same way (responses this small are never compressed), and statuses, messages and error details
 * written by connect-es's own setTrailerStatus. Everything else (gRPC-Web, Connect, JSON, other
 * methods) still goes through connect-es.
 */
export function grpcUnary(route: UnaryRoute, options: GrpcUnaryOptions) {
  const { method, impl } = route;
  const methodPath = `/${method.parent.typeName}/${method.name}`;
  return (req: NodeRequest, res: NodeResponse): void => {
    const responseHeader = new Headers({ "content-type": "application/grpc+proto" });
    const responseTrailer = new Headers({ "grpc-status": "0" });
    const finish = (message: Uint8Array | undefined, error: unknown) => {
      if (error !== undefined) {
        const connectError =
          error instanceof ConnectError ? error : new ConnectError("internal error", Code.Internal, undefined, undefined, error);
        if (!(error instanceof ConnectError)) options.onError(req, res, error);
        setTrailerStatus(responseTrailer, connectError);
        options.report(req, connectError.code);
      } else options.report(req, 0);
      if (res.headersSent || res.destroyed) return;
      res.writeHead(200, Object.fromEntries(responseHeader));
      if (message) res.write(encodeEnvelope(0, message));
      res.addTrailers(Object.fromEntries(responseTrailer));
      res.end();
    };

    const compression = compressionNegotiate(
      options.acceptCompression,
      header(req, "grpc-encoding"),
      header(req, "grpc-accept-encoding"),
      "grpc-accept-encoding",
    );
    if (compression.response) responseHeader.set("grpc-encoding", compression.response.name);
    const timeout = parseTimeout(header(req, "grpc-timeout"), Number.MAX_SAFE_INTEGER);
    const refused = compression.error ?? timeout.error;
    if (refused) {
      req.resume();
      finish(undefined, refused);
      return;
    }

    readOneEnvelope(req, options.readMaxBytes).then(
      async (envelope) => {
        if (envelope === undefined) return; // the client went away
        let message: Uint8Array;
        try {
          const { data } = await envelopeDecompress(envelope, compression.request, options.readMaxBytes).catch((e: unknown) => {
            // connect-es says INTERNAL; it is the client's fault, as our adapter says for the general path.
            throw ConnectError.from(e).code === Code.Internal ? new ConnectError(ConnectError.from(e).rawMessage, Code.InvalidArgument) : e;
          });
          let request: Message;
          try {
            request = fromBinary(method.input, data);
          } catch (e) {
            throw new ConnectError(`parse binary: ${e instanceof Error ? e.message : String(e)}`, Code.InvalidArgument);
          }
          const context: HandlerContext = {
            method,
            service: method.parent,
            signal: neverAborted,
            timeoutMs: deadlineOf(timeout.timeoutMs),
            requestMethod: "POST",
            requestHeader: requestHeaders(req),
            responseHeader,
            responseTrailer,
            protocolName: "grpc",
            values: options.contextValues(req),
            url: methodPath,
          };
          message = toBinary(method.output, await impl(request, context));
        } catch (error) {
          return finish(undefined, error);
        }
        finish(message, undefined);
      },
      (error: unknown) => finish(undefined, error),
    );
  };
}

/**
 * The request's single enveloped message, refused as connect-es does: an envelope announcing more
 * than readMaxBytes as soon as its header arrives, a second message as soon as it is complete, no
 * message or a cut-off one at the end. Undefined when the client aborted.
 */
function readOneEnvelope(req: NodeRequest, readMaxBytes: number): Promise<{ flags: number; data: Uint8Array } | undefined> {
  return new Promise((resolve, reject) => {
    let buffered: Buffer = Buffer.alloc(0);
    let envelope: { flags: number; data: Uint8Array } | undefined;
    let settled = false;
    const fail = (error: ConnectError) => {
      settled = true;
      req.pause();
      reject(error);
    };
    req.on("data", (chunk: Buffer) => {
      if (settled) return;
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      while (buffered.length >= 5) {
        const length = buffered.readUInt32BE(1);
        if (length > readMaxBytes)
          return fail(
            new ConnectError(`message size ${length} is larger than configured readMaxBytes ${readMaxBytes}`, Code.ResourceExhausted),
          );
        if (buffered.length < 5 + length) return;
        if (envelope) return fail(new ConnectError("protocol error: received extra input message for unary method", Code.Unimplemented));
        envelope = { flags: buffered[0]!, data: buffered.subarray(5, 5 + length) };
        buffered = buffered.subarray(5 + length);
      }
    });
    req.on("end", () => {
      if (settled) return;
      settled = true;
      if (buffered.length > 0) reject(new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument));
      else if (!envelope) reject(new ConnectError("protocol error: missing input message for unary method", Code.Unimplemented));
      else resolve(envelope);
    });
    const gone = () => {
      if (settled) return;
      settled = true;
      resolve(undefined);
    };
    req.on("error", gone);
    req.on("aborted", gone);
  });
}

function header(req: NodeRequest, name: string): string | null {
  const value = req.headers[name];
  return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
}

/** The request's headers as the implementation reads them (HTTP/2 pseudo-headers left out). */
function requestHeaders(req: NodeRequest): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (name.startsWith(":") || value === undefined) continue;
    headers.set(name, Array.isArray(value) ? value.join(", ") : value);
  }
  return headers;
}

function deadlineOf(timeoutMs: number | undefined): () => number | undefined {
  if (timeoutMs === undefined) return () => undefined;
  const deadline = Date.now() + timeoutMs;
  return () => deadline - Date.now();
}
