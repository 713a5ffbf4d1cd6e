import { beforeAll, describe, expect, it } from "vitest";
import { startTestService, traceBody, type TestService } from "../support/test-service.js";
import { expectServed, openRaw, type RawConnection } from "./support/attack.js";
import { ErrorCode, errorCodeOf, FrameType, RawH2 } from "./support/raw-h2.js";

// Connection-level abuse: piles of idle connections, more HTTP/2 streams than the server allows,
// and HTTP/2 rapid reset (CVE-2023-44487). The limits are set low here; the defaults are in config.ts.
let service: TestService;
let key: string;
const maxStreams = 16;
const maxConnections = 64;

beforeAll(async () => {
  service = await startTestService({
    headersTimeoutMs: 1500,
    requestTimeoutMs: 3000,
    h2IdleTimeoutMs: 3000,
    h2MaxConcurrentStreams: maxStreams,
    maxConnections,
    plans: { pro: { per_minute: 1_000_000, per_month: 1_000_000_000 } },
  });
  key = (await service.createKey("pro")).key;
});

const postHeaders = (k: string): [string, string][] => [
  [":method", "POST"],
  [":scheme", "http"],
  [":authority", "127.0.0.1"],
  [":path", "/v1/traces"],
  ["content-type", "application/json"],
  ["authorization", `Bearer ${k}`],
];

describe("many idle connections", () => {
  it("connections past MAX_CONNECTIONS are closed at once; idle ones are cut by the header timeout, then honest clients get in", async () => {
    const idle: RawConnection[] = [];
    for (let i = 0; i < maxConnections + 20; i++) idle.push(await openRaw(service.port));
    // The ones past the bound are dropped straight away.
    const dropped = await Promise.all(idle.slice(maxConnections).map((c) => c.closedWithin(5000)));
    expect(dropped.every(Boolean)).toBe(true);
    // Every idle connection is cut by the header timeout, freeing the slots.
    const cut = await Promise.all(idle.map((c) => c.closedWithin(15_000)));
    expect(cut.every(Boolean)).toBe(true);
    await expectServed(service.url, key);
  });

  it("idle connections below the bound do not keep an honest client out", async () => {
    const idle: RawConnection[] = [];
    for (let i = 0; i < maxConnections / 2; i++) idle.push(await openRaw(service.port));
    await expectServed(service.url, key);
    for (const c of idle) c.socket.destroy();
  });
});

describe("HTTP/2 streams are bounded", () => {
  it(`the server advertises at most ${maxStreams} concurrent streams and refuses streams past it`, async () => {
    const client = await RawH2.open(service.port);
    expect(await client.until(() => client.settings.has(0x3), 5000)).toBe(true);
    expect(client.settings.get(0x3)).toBe(maxStreams);
    // Open three times as many streams as allowed, each waiting for a body that never comes.
    const streams: number[] = [];
    for (let i = 0; i < maxStreams * 3; i++) streams.push(client.headers(postHeaders(key), false));
    const refused = () => client.received(FrameType.RST_STREAM).filter((f) => errorCodeOf(f) === ErrorCode.REFUSED_STREAM).length;
    await client.until(() => refused() >= maxStreams * 2 || client.received(FrameType.GOAWAY).length > 0, 5000);
    expect(refused() >= maxStreams * 2 || client.received(FrameType.GOAWAY).length > 0).toBe(true);
    await expectServed(service.url, key);
    client.close();
  });

  it("HTTP/2 rapid reset: a connection that opens and cancels streams in a flood is sent GOAWAY and closed", async () => {
    const client = await RawH2.open(service.port);
    await client.until(() => client.settings.has(0x3), 5000);
    let opened = 0;
    // Bounded: at most 20,000 streams, stop as soon as the server hangs up.
    for (; opened < 20_000 && !client.closed; opened++) {
      const stream = client.headers(postHeaders(key), false);
      client.reset(stream);
      if (opened % 500 === 499) await new Promise((resolve) => setImmediate(resolve));
    }
    await client.until(() => client.received(FrameType.GOAWAY).length > 0, 10_000);
    const goaway = client.received(FrameType.GOAWAY)[0];
    expect(goaway).toBeDefined();
    // Ours is ENHANCE_YOUR_CALM; Node 24's own rapid-reset guard may get there first with INTERNAL_ERROR.
    expect([ErrorCode.ENHANCE_YOUR_CALM, ErrorCode.PROTOCOL_ERROR, ErrorCode.INTERNAL_ERROR]).toContain(errorCodeOf(goaway!));
    expect(opened).toBeLessThan(20_000);
    client.close();
    await expectServed(service.url, key);
  });

  it("a well-behaved HTTP/2 client still gets its traces stored over a raw connection", async () => {
    const client = await RawH2.open(service.port);
    const stream = client.headers(postHeaders(key), false);
    client.data(stream, Buffer.from(JSON.stringify(traceBody(key))), true);
    expect(await client.until(() => client.received(FrameType.HEADERS, stream).length > 0, 10_000)).toBe(true);
    client.close();
  });
});
