import type { Config } from "../config/config.js";
import { createServer as createHttp1Server, type Server as Http1Server } from "node:http";
import {
  constants as h2constants,
  createServer as createHttp2Server,
  type Http2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from "node:http2";
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from "node:net";
import { createServer as createTlsServer, type TLSSocket } from "node:tls";
import { answerClientError, requestTimeoutBody as timeoutBody } from "./client-error.js";
import { startHttp2Session } from "./h2-preface-replay.js";
import type { NodeRequest, NodeResponse } from "./node-types.js";

/** How long clients may take and how much they may hold (the options of the same names in config.ts). */
export type ConnectionLimits = Pick<
  Config,
  "headersTimeoutMs" | "requestTimeoutMs" | "keepAliveTimeoutMs" | "h2IdleTimeoutMs" | "h2MaxConcurrentStreams" | "maxConnections"
>;

export interface ListenOptions {
  port: number;
  host: string;
  /** PEM certificate and key: when given, the port speaks TLS and ALPN picks h2 or http/1.1. */
  tls?: { cert: Buffer; key: Buffer };
  limits: ConnectionLimits;
}

export interface Listener {
  port: number;
  url: string;
  /** Stops accepting, lets in-flight requests finish for up to graceMs, then cuts what is left. */
  close(graceMs?: number): Promise<void>;
}

/**
 * Takes an HTTP/2 stream before Node's compatibility layer wraps it in a request and a response,
 * to answer it on the stream itself: returns the headers every response on it carries (for the
 * 408 listen may send), or undefined to leave the stream to the request handler.
 */
export type StreamTaker = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => OutgoingHttpHeaders | undefined;

type Handler = ((req: NodeRequest, res: NodeResponse) => void) & { takeStream?: StreamTaker };

/** Every HTTP/2 connection starts with this preface; an HTTP/1.1 request line never starts with "PRI". */
const h2Preface = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/**
 * TLS 1.2 and 1.3 only, forward-secret AEAD suites only (Mozilla's "intermediate" list), which is
 * also what HTTP/2 requires (RFC 9113 appendix A).
 */
const tlsCiphers = [
  "TLS_AES_128_GCM_SHA256",
  "TLS_AES_256_GCM_SHA384",
  "TLS_CHACHA20_POLY1305_SHA256",
  "ECDHE-ECDSA-AES128-GCM-SHA256",
  "ECDHE-RSA-AES128-GCM-SHA256",
  "ECDHE-ECDSA-AES256-GCM-SHA384",
  "ECDHE-RSA-AES256-GCM-SHA384",
  "ECDHE-ECDSA-CHACHA20-POLY1305",
  "ECDHE-RSA-CHACHA20-POLY1305",
].join(":");

/**
 * Streams a client may cancel (RST_STREAM) per connection within a second before the connection
 * is sent GOAWAY ENHANCE_YOUR_CALM: HTTP/2 rapid reset (CVE-2023-44487). Honest clients cancel a
 * few streams at most.
 */
const maxResetsPerSecond = 200;

/**
 * One port for every protocol: cleartext HTTP/1.1 and h2c with prior knowledge (what gRPC clients
 * use) told apart by the first bytes of each connection, or TLS with ALPN when a certificate is
 * given. Both paths end in the same two servers, so every timeout and limit holds on each.
 */
export async function listen(handler: Handler, options: ListenOptions): Promise<Listener> {
  const { limits } = options;
  const headersTimeout = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
  const sockets = new Set<Socket>();
  let draining = false;
  const http1: Http1Server = createHttp1Server(
    {
      headersTimeout,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // Node checks both timeouts on this period (30 s by default, which would let a slow client
      // hold its connection for up to 30 s past the timeout).
      connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(headersTimeout / 4))),
    },
    (req, res) => {
      const socket = req.socket as ConnectionState;
      if (socket[kOpening]) clearOpeningDeadline(socket);
      // Shutting down: this response tells the client `Connection: close`, so it does not send
      // its next request into a connection that is about to close.
      if (draining) res.shouldKeepAlive = false;
      else socket[kResponse] = res;
      handler(req, res);
    },
  );
  http1.on("clientError", (error: NodeJS.ErrnoException, socket: ConnectionState) => answerClientError(error, socket, socket[kResponse]));
  const http2: Http2Server = createHttp2Server(
    {
      settings: { maxConcurrentStreams: limits.h2MaxConcurrentStreams },
      // Streams refused for exceeding the limit before the session is closed as abusive.
      maxSessionRejectedStreams: 100,
    },
    http2Handler(handler, limits.requestTimeoutMs),
  );
  if (handler.takeStream) takeStreamsFirst(http2, handler.takeStream, limits.requestTimeoutMs);
  http2.setTimeout(limits.h2IdleTimeoutMs); // an idle session is destroyed

  let front: NetServer;
  if (options.tls) {
    front = createTlsServer(
      {
        ...options.tls,
        ALPNProtocols: ["h2", "http/1.1"],
        minVersion: "TLSv1.2",
        ciphers: tlsCiphers,
        honorCipherOrder: true,
        handshakeTimeout: headersTimeout,
      },
      (socket: TLSSocket) => {
        socket.setTimeout(0);
        // The handshake had its own timeout; the request's headers get theirs from here.
        openingDeadline(socket, headersTimeout);
        if (socket.alpnProtocol === "h2") http2.emit("connection", socket);
        else http1.emit("connection", socket);
      },
    );
  } else {
    front = createNetServer({ noDelay: true }, (socket) =>
      sniff(socket, headersTimeout, (isH2, head) => {
        if (isH2) return void startHttp2Session(http2, socket, head);
        socket.unshift(head);
        http1.emit("connection", socket);
      }),
    );
  }
  front.maxConnections = limits.maxConnections;
  front.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    if (!options.tls) openingDeadline(socket, headersTimeout);
  });
  // A failed or timed-out handshake (handshakeTimeout) is the client's problem: drop it quietly.
  front.on("tlsClientError", (_error: Error, socket: Socket) => socket.destroy());

  await new Promise<void>((resolve, reject) => {
    front.once("error", reject);
    front.listen(options.port, options.host, () => resolve());
  });
  // Node's HTTP/1.1 server starts checking headersTimeout and requestTimeout when it starts
  // listening; it never listens itself (it is handed connections), so it is told here.
  http1.emit("listening");
  const { port } = front.address() as AddressInfo;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;

  const sessions = new Set<ServerHttp2Session>();
  http2.on("session", (session: ServerHttp2Session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
    // The client's preface and SETTINGS have arrived: from here the HTTP/2 timeouts apply.
    session.once("remoteSettings", () => clearOpeningDeadline(session.socket as ConnectionState));
    limitResets(session);
  });

  return {
    port,
    url: `${options.tls ? "https" : "http"}://${host}:${port}`,
    async close(graceMs = 5000) {
      const closed = new Promise<void>((resolve) => front.close(() => resolve()));
      // HTTP/2 sessions get a GOAWAY and end after their open streams. HTTP/1.1 clients are told
      // `Connection: close` on every response not yet sent, and idle keep-alive connections end
      // at their keep-alive timeout, which clients were told (Keep-Alive: timeout=…) and so do
      // not race: closing them at once would reset whatever request a client was sending.
      draining = true;
      for (const session of sessions) session.close();
      for (const socket of sockets) {
        const response = (socket as ConnectionState)[kResponse];
        if (response && !response.headersSent) response.shouldKeepAlive = false;
      }
      const deadline = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      await closed;
      clearTimeout(deadline);
      http1.close(); // stops its timeout checks
    },
  };
}

const kOpening = Symbol("opening deadline");
const kResponse = Symbol("latest response");

/** What listen keeps on each connection: its opening deadline, and its latest HTTP/1.1 response. */
type ConnectionState = Socket & { [kOpening]?: NodeJS.Timeout; [kResponse]?: Http1Response };
type Http1Response = { headersSent: boolean; writableFinished: boolean; shouldKeepAlive: boolean };

/**
 * A connection must have sent its first request's headers (HTTP/1.1), or its preface and
 * SETTINGS (HTTP/2), within the header timeout of opening, however slowly it trickles them: an
 * idle timeout, which every byte restarts, would let a byte every few seconds hold it for ever.
 * Includes the TLS handshake and telling HTTP/1.1 from HTTP/2.
 */
function openingDeadline(socket: ConnectionState, timeoutMs: number): void {
  socket[kOpening] = setTimeout(() => socket.destroy(), timeoutMs);
  socket[kOpening].unref();
  socket.once("close", () => clearOpeningDeadline(socket));
}

function clearOpeningDeadline(socket: ConnectionState): void {
  clearTimeout(socket[kOpening]);
  socket[kOpening] = undefined;
}

/** The headers of what a stream that exceeds the request timeout is told, when nothing was sent on it yet. */
const timeoutHeaders = { "content-type": "application/json", "content-length": Buffer.byteLength(timeoutBody) };

/** Requests through Node's compatibility layer: each stream guarded, its 408 sent on the response (with the headers the handler set). */
function http2Handler(handler: Handler, requestTimeoutMs: number) {
  return (req: Http2ServerRequest, res: Http2ServerResponse): void => {
    guardStream(req.stream, requestTimeoutMs, () => {
      if (res.headersSent) return;
      res.writeHead(408, timeoutHeaders);
      res.end(timeoutBody);
    });
    handler(req, res);
  };
}

/**
 * Streams the taker answers itself skip Node's compatibility layer, whose request and response
 * objects cost a unary gRPC call more than the rest of its HTTP/2 handling (D38). That layer
 * listens for the server's streams; its listener is kept and handed every stream not taken.
 */
function takeStreamsFirst(server: Http2Server, take: StreamTaker, requestTimeoutMs: number): void {
  const compat = server.listeners("stream") as ((...args: unknown[]) => void)[];
  server.removeAllListeners("stream");
  server.on("stream", (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, flags: number, rawHeaders: string[]) => {
    const sent = take(stream, headers);
    if (!sent) {
      for (const listener of compat) listener.call(server, stream, headers, flags, rawHeaders);
      return;
    }
    // A reset or a write after the client left ends the stream; it is no fault of the process.
    stream.on("error", () => {});
    guardStream(stream, requestTimeoutMs, () => {
      if (stream.headersSent || stream.destroyed) return;
      stream.respond({ ...sent, ...timeoutHeaders, ":status": 408 });
      stream.end(timeoutBody);
    });
  });
}

/**
 * HTTP/2 streams get what Node's HTTP/1.1 server gives connections: a request timeout (408, then
 * the stream is reset), and a stream whose response is complete before its request is stops the
 * client from sending the rest (RST_STREAM NO_ERROR, RFC 9113 §8.1) instead of holding the stream
 * open on a paused, flow-controlled body forever.
 */
function guardStream(stream: ServerHttp2Stream, requestTimeoutMs: number, answerTimeout: () => void): void {
  /** The client has not finished sending its request (END_STREAM not yet received). */
  const stillSending = () => !stream.destroyed && !stream.readableEnded && !stream.endAfterHeaders && !stream.state.remoteClose;
  const timer = setTimeout(() => {
    if (!stillSending()) return;
    answerTimeout();
    stream.close(h2constants.NGHTTP2_CANCEL);
  }, requestTimeoutMs);
  timer.unref();
  stream.on("close", () => clearTimeout(timer));
  // Once the response is complete on the wire (END_STREAM sent, after any trailers: the
  // compat response's "finish" only comes when the stream closes, which is what never happens here).
  const stopClient = (tries: number): void => {
    if (!stillSending()) return;
    if (stream.state.localClose || tries >= 100) return void stream.close(h2constants.NGHTTP2_NO_ERROR);
    setTimeout(() => stopClient(tries + 1), 10).unref();
  };
  stream.on("finish", () => stopClient(0));
}

/** Rapid reset: a session whose client cancels more than maxResetsPerSecond streams in a second is shut. */
function limitResets(session: ServerHttp2Session): void {
  let windowStart = Date.now();
  let resets = 0;
  session.on("stream", (stream) => {
    stream.once("aborted", () => {
      const now = Date.now();
      if (now - windowStart > 1000) {
        windowStart = now;
        resets = 0;
      }
      if (++resets > maxResetsPerSecond && !session.destroyed) {
        session.goaway(h2constants.NGHTTP2_ENHANCE_YOUR_CALM);
        session.destroy();
      }
    });
  });
}

/** Reads a new connection's first bytes to tell HTTP/2 (prior knowledge) from HTTP/1.1. */
function sniff(socket: Socket, timeoutMs: number, route: (isH2: boolean, head: Buffer) => void): void {
  let seen = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    seen = Buffer.concat([seen, chunk]);
    const decisive = Math.min(seen.length, h2Preface.length);
    const isH2 = seen.subarray(0, decisive).equals(h2Preface.subarray(0, decisive));
    if (isH2 && seen.length < 3) return; // too few bytes to tell yet
    socket.off("data", onData);
    socket.pause();
    socket.setTimeout(0);
    route(isH2, seen);
    if (!isH2) socket.resume();
  };
  socket.on("data", onData);
  socket.setTimeout(timeoutMs, () => socket.destroy());
}
