import { connect, createServer as createHttp2Server } from "node:http2";
import { createServer as createNetServer, type AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { privateReceive, type Replay, startHttp2Session } from "../../src/server/h2-preface-replay.js";

// h2c with prior knowledge shares the port with HTTP/1.1, so each connection's first bytes are read
// before the HTTP/2 session starts and must be handed to it. Node 22+ does so itself; Node 20 only
// through its private kHandle symbol (src/server/h2-preface-replay.ts). A Node upgrade that does
// neither fails here, loudly, rather than cutting every h2c connection in production.

const replays: Replay[] = [];
const http2 = createHttp2Server();
http2.on("stream", (stream) => {
  stream.respond({ ":status": 200 });
  stream.end("served");
});
let sessionHasPrivateReceive: boolean | undefined;
http2.on("session", (session) => (sessionHasPrivateReceive = privateReceive(session) !== undefined));
const front = createNetServer((socket) =>
  socket.once("data", (head) => {
    socket.pause();
    replays.push(startHttp2Session(http2, socket, head));
  }),
);
let url = "";

beforeAll(async () => {
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => front.close(() => resolve())));

it(`an h2c connection whose preface was read first is served on Node ${process.versions.node}`, async () => {
  const session = connect(url);
  try {
    const body = await new Promise<string>((resolve, reject) => {
      const stream = session.request({ ":path": "/" });
      let text = "";
      stream.setEncoding("utf8");
      stream.on("data", (chunk: string) => (text += chunk));
      stream.on("end", () => resolve(text));
      stream.on("error", reject);
      session.on("error", reject);
    });
    expect(body).toBe("served");
  } finally {
    session.close();
  }
  expect(replays).toHaveLength(1);
  // Node replays the bytes itself, or the private handle is there to: never neither.
  expect(["node", "private handle"]).toContain(replays[0]);
  if (replays[0] === "private handle") expect(sessionHasPrivateReceive).toBe(true);
});

it("Node 20, which does not replay the bytes itself, still has the private handle", () => {
  if (replays[0] === "node") return expect(Number(process.versions.node.split(".")[0])).toBeGreaterThanOrEqual(22);
  expect(sessionHasPrivateReceive, `Node ${process.versions.node} has no kHandle receive(): h2c with prior knowledge is broken`).toBe(true);
});
