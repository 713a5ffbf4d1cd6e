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
import type { Compression } from "@connectrpc/connect/protocol";
import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerHttp2Stream } from "node:http2";
import type { Readable } from "node:stream";
import {
  codeToHttpStatus,
  compressionNegotiate,
  envelopeDecompress,
  errorToJsonBytes,
  parseConnectTimeout,
  parseGrpcTimeout,
  readAllBytes,
  setTrailerStatus,
  trailerMux,
} from "./connect-internals.js";
import { HeaderRecord } from "./header-record.js";
import type { NodeRequest, NodeResponse } from "./node-types.js";

/**
 * A unary method and its implementation (the one registered on the router), types erased, with
 * how the request's bytes are read: protobuf-es's fromBinary, or a reader that throws what it
 * throws for bytes that are not the method's message (OTLP Export, D44).
 */
export interface UnaryRoute {
  method: DescMethodUnary;
  decode: (data: Uint8Array) => unknown;
  impl: (request: unknown, context: HandlerContext) => Promise<Message>;
  /** This method's largest message, when it differs from the adapter's (OTLP Exports). */
  readMaxBytes?: number;
}

export function unaryRoute<I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  impl: (request: MessageShape<I>, context: HandlerContext) => Promise<MessageInitShape<O>> | MessageInitShape<O>,
): UnaryRoute {
  return decodedRoute(method, (data) => fromBinary(method.input, data), impl);
}

/** A route whose requests are read by `decode` into what `impl` takes. */
export function decodedRoute<I extends DescMessage, O extends DescMessage, R>(
  method: DescMethodUnary<I, O>,
  decode: (data: Uint8Array) => R,
  impl: (request: R, context: HandlerContext) => Promise<MessageInitShape<O>> | MessageInitShape<O>,
): UnaryRoute {
  return {
    method: method as unknown as DescMethodUnary,
    decode,
    impl: async (request, context) => create(method.output, await impl(request as R, context)),
  };
}

export interface DirectUnaryOptions {
  acceptCompression: Compression[];
  /** Largest message, after decompression (MAX_BODY_BYTES). */
  readMaxBytes: number;
  contextValues: (headers: IncomingHttpHeaders, remoteAddress: string | undefined) => ContextValues;
  /** The router's: a longer timeout the client asks for is refused (INVALID_ARGUMENT), as connect-es refuses it. */
  maxTimeoutMs?: number;
  /** The router's: aborts the signal of every call in flight. */
  shutdownSignal?: AbortSignal;
}

/** What ends a call on the wire: its HTTP/2 stream, or its Node response. */
interface CallEnd {
  once(event: "close", listener: () => void): unknown;
  readonly destroyed: boolean;
}

/** Who hears of one call's end. */
export interface CallObserver {
  /** Told the call's status code (0 for OK). */
  report(code: Code | 0): void;
  /** Told of an error outside any RPC status (a bug in an implementation). */
  onError(error: unknown): void;
}

/** The envelope flag of a compressed message. */
const compressedFlag = 0b00000001;

/** connect-es compresses a response only from this size (its default compressMinBytes). */
const compressMinBytes = 1024;

/**
 * Unary calls in the protobuf encoding, over gRPC (HTTP/2) or the Connect protocol, answered
 * directly: connect-es's general handler reads and writes every call through chains of async
 * iterables, with a linked AbortController and a DOMException per call, which cost several times
 * what our ingest pipeline does. gRPC calls are answered on the raw HTTP/2 stream (D38), Connect
 * calls on the Node request and response. The wire behaviour stays connect-es's: its own
 * functions negotiate compression, parse timeouts, decompress, read the Connect body and write
 * statuses and error details (setTrailerStatus, errorToJsonBytes, trailerMux); the gRPC envelope
 * is refused as it refuses it (a size over the limit from the envelope's header, a second message
 * as soon as it is complete, none or a cut-off one at the end). A body that is not the method's
 * message is INVALID_ARGUMENT, as our adapter makes of connect-es's INTERNAL on the general path.
 * The router's maxTimeoutMs and shutdown signal hold as on connect-es's path, and so does each
 * call's abort signal (made only when an implementation reads it); router interceptors do not run
 * here, so rpcAdapter sends every call through connect-es when the router has any.
 * gRPC-Web, JSON and every other method still go through connect-es.
 */
export function directUnary(route: UnaryRoute, options: DirectUnaryOptions) {
  const { method, decode, impl } = route;
  const maxTimeoutMs = options.maxTimeoutMs ?? Number.MAX_SAFE_INTEGER;
  const url = `/${method.parent.typeName}/${method.name}`;

  /** Decodes the request, runs the implementation, encodes its answer; rejects with a ConnectError. */
  async function call(
    data: Uint8Array,
    headers: IncomingHttpHeaders,
    remoteAddress: string | undefined,
    protocolName: string,
    timeoutMs: number | undefined,
    responseHeader: Headers,
    responseTrailer: Headers,
    end: CallEnd,
  ) {
    let request: unknown;
    try {
      request = decode(data);
    } catch (e) {
      throw new ConnectError(`parse binary: ${e instanceof Error ? e.message : String(e)}`, Code.InvalidArgument);
    }
    const context = new CallContext(
      method,
      deadlineOf(timeoutMs),
      new HeaderRecord(headers),
      responseHeader,
      responseTrailer,
      protocolName,
      options.contextValues(headers, remoteAddress),
      url,
      end,
      options.shutdownSignal,
    );
    return toBinary(method.output, await impl(request, context));
  }

  /**
   * A gRPC call on its HTTP/2 stream: `headers` are the request's, `sent` go on the response
   * beside the call's own, `remoteAddress` is the connection's peer. The status goes out in
   * trailers, as connect-es writes them, after the one message when there is one; nothing is
   * written once the client has reset the stream.
   */
  function grpc(
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    sent: OutgoingHttpHeaders,
    remoteAddress: string | undefined,
    observer: CallObserver,
  ): void {
    const responseHeader = new HeaderRecord({ "content-type": "application/grpc+proto" });
    const responseTrailer = new HeaderRecord({ "grpc-status": "0" });
    const finish = (message: Uint8Array | undefined, error?: unknown) => {
      const failure = error === undefined ? undefined : asConnectError(error, observer);
      if (failure) setTrailerStatus(responseTrailer, failure);
      observer.report(failure?.code ?? 0);
      if (stream.headersSent || stream.destroyed || stream.closed) return;
      // Object.assign: on Node 20 a literal with two spreads costs about 3.6 µs, this 0.13 µs (D41).
      stream.respond(Object.assign({}, sent, responseHeader.record, { ":status": 200 }), { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers(responseTrailer.record));
      stream.end(message && enveloped(message));
    };
    const compression = compressionNegotiate(
      options.acceptCompression,
      header(headers, "grpc-encoding"),
      header(headers, "grpc-accept-encoding"),
      "grpc-accept-encoding",
    );
    if (compression.response) responseHeader.set("grpc-encoding", compression.response.name);
    const timeout = parseGrpcTimeout(header(headers, "grpc-timeout"), maxTimeoutMs);
    const refused = compression.error ?? timeout.error;
    if (refused) {
      stream.resume();
      finish(undefined, refused);
      return;
    }
    const answer = async () => {
      const envelope = await readOneEnvelope(stream, options.readMaxBytes);
      if (envelope === undefined) return; // the client went away
      const data =
        envelope.flags & compressedFlag
          ? (
              await envelopeDecompress(envelope, compression.request, options.readMaxBytes).catch((e: unknown) =>
                Promise.reject(clientsFault(e)),
              )
            ).data
          : envelope.data;
      finish(await call(data, headers, remoteAddress, "grpc", timeout.timeoutMs, responseHeader, responseTrailer, stream));
    };
    answer().catch((error: unknown) => finish(undefined, error));
  }

  function connect(req: NodeRequest, res: NodeResponse, observer: CallObserver): void {
    const responseHeader = new Headers({ "content-type": "application/proto" });
    const responseTrailer = new Headers();
    const compression = compressionNegotiate(
      options.acceptCompression,
      header(req.headers, "content-encoding"),
      header(req.headers, "accept-encoding"),
      "Accept-Encoding",
    );
    const timeout = parseConnectTimeout(header(req.headers, "connect-timeout-ms"), maxTimeoutMs);
    (async () => {
      let status = 200;
      let body: Uint8Array;
      try {
        if (compression.error) throw compression.error;
        if (timeout.error) throw timeout.error;
        let bytes = await readAllBytes(req as AsyncIterable<Uint8Array>, options.readMaxBytes, header(req.headers, "content-length"));
        if (compression.request)
          bytes = await compression.request.decompress(bytes, options.readMaxBytes).catch((e: unknown) => Promise.reject(clientsFault(e)));
        body = await call(
          bytes,
          req.headers,
          req.socket?.remoteAddress,
          "connect",
          timeout.timeoutMs,
          responseHeader,
          responseTrailer,
          res,
        );
        observer.report(0);
      } catch (error) {
        const failure = asConnectError(error, observer);
        observer.report(failure.code);
        status = codeToHttpStatus(failure.code);
        responseHeader.set("content-type", "application/json");
        for (const [key, value] of failure.metadata) responseHeader.set(key, value);
        body = errorToJsonBytes(failure, {});
      }
      if (compression.response && body.byteLength >= compressMinBytes) {
        body = await compression.response.compress(body);
        responseHeader.set("content-encoding", compression.response.name);
      }
      const headers = trailerMux(responseHeader, responseTrailer);
      headers.set("content-length", String(body.byteLength));
      if (res.headersSent || res.destroyed) return;
      res.writeHead(status, Object.fromEntries(headers));
      res.end(body);
    })().catch((error: unknown) => observer.onError(error));
  }

  return { grpc, connect };
}

/**
 * One uncompressed message in a gRPC envelope (flags, then its length in 4 bytes big-endian), as
 * connect-es's encodeEnvelope writes it, in a buffer from Node's pool: a fresh Uint8Array of its
 * own cost a direct call more than the envelope's header and copy.
 */
function enveloped(message: Uint8Array): Buffer {
  const bytes = Buffer.allocUnsafe(5 + message.byteLength);
  bytes[0] = 0;
  bytes.writeUInt32BE(message.byteLength, 1);
  bytes.set(message, 5);
  return bytes;
}

const noBytes: Buffer = Buffer.alloc(0);

/** The error a call failed with, as connect-es would answer it; the observer is told when it was no RPC status. */
function asConnectError(error: unknown, observer: CallObserver): ConnectError {
  if (error instanceof ConnectError) return error;
  observer.onError(error);
  return new ConnectError("internal error", Code.Internal, undefined, undefined, error);
}

/** connect-es calls an undecodable or wrongly compressed body INTERNAL; it is the client's fault. */
function clientsFault(error: unknown): unknown {
  const connectError = ConnectError.from(error);
  return connectError.code === Code.Internal ? new ConnectError(connectError.rawMessage, Code.InvalidArgument) : error;
}

/**
 * The request's single enveloped message, refused as connect-es does: an envelope announcing more
 * than readMaxBytes as soon as its header arrives, a second message as soon as it is complete, no
 * message or a cut-off one at the end. Undefined when the client reset the stream or went away.
 */
function readOneEnvelope(body: Readable, readMaxBytes: number): Promise<{ flags: number; data: Uint8Array } | undefined> {
  return new Promise((resolve, reject) => {
    let buffered = noBytes;
    let envelope: { flags: number; data: Uint8Array } | undefined;
    let settled = false;
    const fail = (error: ConnectError) => {
      settled = true;
      body.pause();
      reject(error);
    };
    body.on("data", (chunk: Buffer) => {
      if (settled) return;
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      while (buffered.length >= 5) {
        const length = buffered.readUInt32BE(1);
        if (length > readMaxBytes) {
          return fail(
            new ConnectError(`message size ${length} is larger than configured readMaxBytes ${readMaxBytes}`, Code.ResourceExhausted),
          );
        }
        if (buffered.length < 5 + length) return;
        if (envelope) return fail(new ConnectError("protocol error: received extra input message for unary method", Code.Unimplemented));
        envelope = { flags: buffered[0]!, data: buffered.subarray(5, 5 + length) };
        buffered = buffered.subarray(5 + length);
      }
    });
    body.on("end", () => {
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
    // A reset or an error ("aborted", "error") closes the stream too.
    body.on("close", gone);
  });
}

function header(headers: IncomingHttpHeaders, name: string): string | null {
  const value = headers[name];
  return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
}

/**
 * What an implementation is told of its call, as connect-es's handler context tells it. A class,
 * so that the abort signal, made only when read (none of ours reads it, and one costs an
 * AbortController and listeners), is a getter on the prototype: an object literal with a getter
 * costs about 0.5 µs per call to create, a class instance what a plain literal does.
 */
class CallContext implements HandlerContext {
  readonly service: HandlerContext["service"];
  readonly requestMethod = "POST";
  private abortSignal: AbortSignal | undefined;

  constructor(
    readonly method: DescMethodUnary,
    readonly timeoutMs: () => number | undefined,
    readonly requestHeader: Headers,
    readonly responseHeader: Headers,
    readonly responseTrailer: Headers,
    readonly protocolName: string,
    readonly values: ContextValues,
    readonly url: string,
    private readonly end: CallEnd,
    private readonly shutdown: AbortSignal | undefined,
  ) {
    this.service = method.parent;
  }

  get signal(): AbortSignal {
    this.abortSignal ??= callSignal(this.end, this.timeoutMs(), this.shutdown);
    return this.abortSignal;
  }
}

/**
 * A call's abort signal, as connect-es's handler context links it: aborted when the call ends on
 * the wire (the client reset it or went away, or it was answered: CANCELED), at its deadline
 * (DEADLINE_EXCEEDED, connect-es's words), or with the shutdown signal's reason.
 */
function callSignal(end: CallEnd, remainingMs: number | undefined, shutdown: AbortSignal | undefined): AbortSignal {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const abort = (reason: unknown) => {
    clearTimeout(timer);
    shutdown?.removeEventListener("abort", onShutdown);
    if (!controller.signal.aborted) controller.abort(reason);
  };
  const onShutdown = () => abort(shutdown?.reason);
  if (end.destroyed) abort(new ConnectError("the call is over", Code.Canceled));
  else end.once("close", () => abort(new ConnectError("the call is over", Code.Canceled)));
  if (shutdown?.aborted) onShutdown();
  else shutdown?.addEventListener("abort", onShutdown);
  if (remainingMs !== undefined) {
    const expire = () => abort(new ConnectError("the operation timed out", Code.DeadlineExceeded));
    if (remainingMs <= 0) expire();
    else timer = setTimeout(expire, remainingMs);
  }
  return controller.signal;
}

function deadlineOf(timeoutMs: number | undefined): () => number | undefined {
  if (timeoutMs === undefined) return () => undefined;
  const deadline = Date.now() + timeoutMs;
  return () => deadline - Date.now();
}
