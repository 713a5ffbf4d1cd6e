import { createServer as createHttp1Server, type Server as Http1Server } from "node:http";
import {
  createSecureServer,
  createServer as createHttp2Server,
  type Http2SecureServer,
  type Http2Server,
  type ServerHttp2Session,
} from "node:http2";
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from "node:net";
import type { NodeRequest, NodeResponse } from "./node-types.js";

export interface ListenOptions {
  port: number;
  host: string;
  /** PEM certificate and key: when given, the port speaks TLS and ALPN picks h2 or http/1.1. */
  tls?: { cert: Buffer; key: Buffer };
}

export interface Listener {
  port: number;
  url: string;
  /** Stops accepting, lets in-flight requests finish for up to graceMs, then cuts what is left. */
  close(graceMs?: number): Promise<void>;
}

type Handler = (req: NodeRequest, res: NodeResponse) => void;

/** Every HTTP/2 connection starts with this preface; an HTTP/1.1 request line never starts with "PRI". */
const h2Preface = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

const timeouts = { headersTimeout: 10_000, requestTimeout: 30_000, keepAliveTimeout: 5_000 };

/**
 * One port for every protocol: cleartext HTTP/1.1 and h2c with prior knowledge (what gRPC clients
 * use) told apart by the first bytes of each connection, or TLS with ALPN when a certificate is given.
 */
export async function listen(handler: Handler, options: ListenOptions): Promise<Listener> {
  const sockets = new Set<Socket>();
  let front: NetServer | Http2SecureServer;
  let http1: Http1Server | undefined;
  let http2: Http2Server | Http2SecureServer;

  if (options.tls) {
    http2 = createSecureServer({ ...options.tls, allowHTTP1: true, minVersion: "TLSv1.2" }, handler);
    front = http2;
  } else {
    http1 = createHttp1Server(timeouts, handler);
    http2 = createHttp2Server({}, handler);
    const [h1, h2] = [http1, http2];
    front = createNetServer({ noDelay: true }, (socket) =>
      sniff(socket, (isH2, head) => {
        if (isH2) return startHttp2Session(h2, socket, head);
        socket.unshift(head);
        h1.emit("connection", socket);
      }),
    );
  }
  front.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    front.once("error", reject);
    front.listen(options.port, options.host, () => resolve());
  });
  const { port } = front.address() as AddressInfo;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;

  const sessions = new Set<ServerHttp2Session>();
  http2.on("session", (session: ServerHttp2Session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
  });

  return {
    port,
    url: `${options.tls ? "https" : "http"}://${host}:${port}`,
    async close(graceMs = 5000) {
      const closed = new Promise<void>((resolve) => front.close(() => resolve()));
      // HTTP/2 sessions get a GOAWAY and end after their open streams; HTTP/1.1 connections
      // are closed as soon as they fall idle between requests.
      for (const session of sessions) session.close();
      http1?.closeIdleConnections();
      const sweep = setInterval(() => http1?.closeIdleConnections(), 20);
      const deadline = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      await closed;
      clearInterval(sweep);
      clearTimeout(deadline);
    },
  };
}

/** Reads a new connection's first bytes to tell HTTP/2 (prior knowledge) from HTTP/1.1. */
function sniff(socket: Socket, route: (isH2: boolean, head: Buffer) => void): void {
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
  socket.setTimeout(timeouts.headersTimeout, () => socket.destroy());
}

/**
 * Hands a connection whose first bytes were already read to the HTTP/2 server. The native
 * session reads the socket itself; Node 22+ first passes it what is buffered in the socket,
 * Node 20 does not, so here the buffered bytes (the sniffed head and whatever arrived since)
 * are passed to the session's handle directly.
 */
function startHttp2Session(server: Http2Server, socket: Socket, head: Buffer): void {
  socket.unshift(head);
  let session: ServerHttp2Session | undefined;
  const capture = (s: ServerHttp2Session) => (session = s);
  server.once("session", capture); // emitted synchronously while the connection is taken
  server.emit("connection", socket);
  server.off("session", capture);
  if (socket.readableLength === 0) return; // this Node version drained it already
  const handleKey = session && Object.getOwnPropertySymbols(session).find((s) => s.description === "kHandle");
  const handle = handleKey && (session as unknown as Record<symbol, { receive?: (data: Buffer) => void }>)[handleKey];
  if (typeof handle?.receive !== "function") {
    socket.destroy(new Error("this Node.js version offers no way to replay the HTTP/2 preface"));
    return;
  }
  for (let chunk: Buffer | null; (chunk = socket.read() as Buffer | null) !== null; ) handle.receive(chunk);
}
