import type { Http2Server, ServerHttp2Session } from "node:http2";
import type { Socket } from "node:net";

/** Who passed the session the bytes read before it started: Node itself, this module through Node's private handle, or no one (the connection is cut). */
export type Replay = "node" | "private handle" | "failed";

/**
 * Hands a connection whose first bytes were already read (to tell h2c from HTTP/1.1) to the HTTP/2
 * server. The native session reads the socket itself; Node 22+ first passes it what is buffered in
 * the socket, Node 20 does not and has no public API to, so there the buffered bytes go to the
 * session's native handle, found by Node's private `kHandle` symbol. That lookup lives here alone;
 * test/hardening/h2-preface-replay.test.ts fails loudly on a Node version that neither replays the
 * bytes itself nor has that handle. On such a version the connection is cut with an error.
 */
export function startHttp2Session(server: Http2Server, socket: Socket, head: Buffer): Replay {
  socket.unshift(head);
  let session: ServerHttp2Session | undefined;
  const capture = (s: ServerHttp2Session) => (session = s);
  server.once("session", capture); // emitted synchronously while the connection is taken
  server.emit("connection", socket);
  server.off("session", capture);
  if (socket.readableLength === 0) return "node";
  const receive = session && privateReceive(session);
  if (!receive) {
    socket.destroy(new Error("this Node.js version offers no way to replay the HTTP/2 preface"));
    return "failed";
  }
  for (let chunk: Buffer | null; (chunk = socket.read() as Buffer | null) !== null; ) receive(chunk);
  return "private handle";
}

/** The session's native receive(), under Node's private `kHandle` symbol; undefined where a Node version has none. */
export function privateReceive(session: ServerHttp2Session): ((data: Buffer) => void) | undefined {
  const key = Object.getOwnPropertySymbols(session).find((s) => s.description === "kHandle");
  const handle = key && (session as unknown as Record<symbol, { receive?: (data: Buffer) => void }>)[key];
  return typeof handle?.receive === "function" ? handle.receive.bind(handle) : undefined;
}
