import { connect as http2Connect, constants as h2 } from "node:http2";
import { beforeAll, describe, expect, it } from "vitest";
import { startTestService, traceBody, type TestService } from "../support/test-service.js";
import { expectServed, openRaw, sleep, trickle } from "./support/attack.js";

// Slowloris and slow-body clients hold a connection by sending a byte at a time. The service
// cuts them off by its header and request timeouts (set short here) while serving everyone else.
let service: TestService;
let key: string;

beforeAll(async () => {
  service = await startTestService({ headersTimeoutMs: 1000, requestTimeoutMs: 2000, h2IdleTimeoutMs: 2000 });
  key = (await service.createKey("pro")).key;
});

/** Long enough that only a server timeout ends the trickle: 300 bytes at 50 ms is 15 s. */
const trickleBytes = 300;
const everyMs = 50;

describe("slow clients are cut off by the header and request timeouts", () => {
  it("a connection that never sends a byte is closed after the header timeout", async () => {
    const idle = await openRaw(service.port);
    await expectServed(service.url, key);
    expect(await idle.closedWithin(10_000)).toBe(true);
  });

  // Gaps shorter than the timeout must not reset it: the whole head gets HEADERS_TIMEOUT_MS from
  // the moment the connection opens, however it is trickled (1,000 ms here).
  for (const [protocol, head] of [
    ["HTTP/1.1 headers", `POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ${"a".repeat(40)}\r\n\r\n`],
    ["an h2c connection preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"],
  ] as const) {
    it(`${protocol} trickled with pauses just under the timeout are cut off one header timeout after the connection opened`, async () => {
      const slow = await openRaw(service.port);
      const opened = performance.now();
      void trickle(slow, Buffer.from(head), 900);
      expect(await slow.closedWithin(6000)).toBe(true);
      expect(performance.now() - opened).toBeLessThan(1000 + 600);
    });
  }

  it("HTTP/1.1 headers trickled a byte at a time are cut off before they end, and others are served meanwhile", async () => {
    const slow = await openRaw(service.port);
    const head = `POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ${"a".repeat(trickleBytes)}\r\n\r\n`;
    const sending = trickle(slow, Buffer.from(head), everyMs);
    await sleep(300);
    await expectServed(service.url, key);
    const written = await sending;
    expect(slow.isClosed()).toBe(true);
    expect(written).toBeLessThan(head.length);
    // When the server answers before hanging up, it says 408.
    if (slow.received()) expect(slow.received()).toMatch(/^HTTP\/1\.1 408/);
  });

  it("an HTTP/1.1 body trickled a byte at a time is cut off by the request timeout", async () => {
    const slow = await openRaw(service.port);
    const body = Buffer.from(JSON.stringify(traceBody(key, { model: "m".repeat(trickleBytes) })));
    slow.socket.write(
      `POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    const sending = trickle(slow, body, everyMs);
    await sleep(300);
    await expectServed(service.url, key);
    const written = await sending;
    expect(slow.isClosed()).toBe(true);
    expect(written).toBeLessThan(body.length);
    // With the JSON body the OpenAPI document gives a 408.
    if (slow.received()) expect(slow.received()).toMatch(/^HTTP\/1\.1 408 [\s\S]*\r\n\r\n\{"error":"Request timeout"\}$/);
  });

  it("an HTTP/2 request body trickled a byte at a time is reset by the request timeout; its connection stays usable", async () => {
    const session = http2Connect(service.url);
    session.on("error", () => {});
    const body = Buffer.from(JSON.stringify(traceBody(key, { model: "m".repeat(trickleBytes) })));
    const stream = session.request({
      ":method": "POST",
      ":path": "/v1/traces",
      "content-type": "application/json",
      authorization: `Bearer ${key}`,
    });
    stream.on("error", () => {});
    let status: number | undefined;
    stream.on("response", (headers) => (status = Number(headers[":status"])));
    const ended = new Promise<void>((resolve) => stream.once("close", () => resolve()));
    let written = 0;
    let done = false;
    void ended.then(() => (done = true));
    const sending = (async () => {
      for (; written < body.length && !done; written++) {
        stream.write(body.subarray(written, written + 1));
        await sleep(everyMs);
      }
    })();
    await sleep(300);
    await expectServed(service.url, key);
    await sending;
    expect(done).toBe(true);
    expect(written).toBeLessThan(body.length);
    if (status !== undefined) expect(status).toBe(408);
    // The same connection still serves a well-behaved request.
    const ok = session.request({ ":method": "GET", ":path": "/healthz" });
    const okStatus = await new Promise<number>((resolve, reject) => {
      ok.on("response", (headers) => resolve(Number(headers[":status"])));
      ok.on("error", reject);
    });
    ok.resume();
    expect(okStatus).toBe(200);
    session.close();
  });

  it("an idle HTTP/2 connection is closed after the idle timeout", async () => {
    const session = http2Connect(service.url);
    session.on("error", () => {});
    const closed = new Promise<number | undefined>((resolve) => {
      session.once("goaway", (code: number) => resolve(code));
      session.once("close", () => resolve(undefined));
    });
    await new Promise<void>((resolve) => session.once("connect", () => resolve()));
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([closed.then(() => "closed"), new Promise((r) => (timer = setTimeout(() => r("open"), 15_000)))]);
    clearTimeout(timer);
    session.destroy();
    expect(outcome).toBe("closed");
    expect(h2.NGHTTP2_NO_ERROR).toBe(0);
  });
});
