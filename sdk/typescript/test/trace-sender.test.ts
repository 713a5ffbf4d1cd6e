import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Trace } from "../src/trace.js";
import { TraceSender, type TraceSenderOptions } from "../src/trace-sender.js";
import { FakeCalltrace } from "./support/fake-calltrace.js";
import { TEST_KEY } from "./support/harness.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const trace = (n = 0): Trace => ({
  provider: "openai",
  model: "gpt-4o",
  tokens_in: n,
  tokens_out: 2,
  latency_ms: 3,
  cost_usd: 0.5,
  api_key: TEST_KEY,
  status: "success",
});

let service: FakeCalltrace;
let sender: TraceSender;
let warnings: string[];

function startSender(options: Partial<TraceSenderOptions> = {}): TraceSender {
  warnings = [];
  sender = new TraceSender({
    endpoint: new URL(service.endpoint),
    apiKey: TEST_KEY,
    queueSize: 100,
    concurrency: 2,
    requestTimeoutMs: 2_000,
    retry: { maxAttempts: 4, baseDelayMs: 10, maxDelayMs: 5_000 },
    warn: (message) => warnings.push(message),
    ...options,
  });
  return sender;
}

beforeEach(async () => {
  service = await FakeCalltrace.start();
});
afterEach(async () => {
  sender.close();
  await service.close();
});

describe("delivery", () => {
  it("POSTs each trace as JSON with the bearer key and its own Idempotency-Key", async () => {
    startSender();
    sender.enqueue(trace(1));
    sender.enqueue(trace(2));
    expect(await sender.flush()).toBe(true);
    const received = service.received.sort((a, b) => (a.body.tokens_in as number) - (b.body.tokens_in as number));
    expect(received.map((r) => r.body)).toEqual([trace(1), trace(2)]);
    for (const { headers } of received) {
      expect(headers.authorization).toBe(`Bearer ${TEST_KEY}`);
      expect(headers["content-type"]).toBe("application/json");
      expect(headers["idempotency-key"]).toMatch(UUID);
    }
    expect(received[0]!.headers["idempotency-key"]).not.toBe(received[1]!.headers["idempotency-key"]);
    expect(sender.stats()).toEqual({ sent: 2, failed: 0, dropped: 0, pending: 0 });
  });

  it("sends on its own, soon after a trace is queued", async () => {
    startSender();
    sender.enqueue(trace());
    const [received] = await service.waitFor(1, 2_000);
    expect(received!.body).toEqual(trace());
  });

  it("retries a 429 after its retry_after, with the same Idempotency-Key", async () => {
    startSender();
    service.answers.push({
      status: 429,
      body: { error: "Rate limit exceeded", retry_after: 1 },
      headers: { "retry-after": "1" },
    });
    sender.enqueue(trace());
    expect(await sender.flush()).toBe(true);
    const [first, retry] = service.received;
    expect(retry!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(950);
    expect(retry!.headers["idempotency-key"]).toBe(first!.headers["idempotency-key"]);
    expect(sender.stats().sent).toBe(1);
  });

  it("takes the Retry-After header when the body has no retry_after", async () => {
    startSender();
    service.answers.push({ status: 503, body: { error: "Service unavailable" }, headers: { "retry-after": "1" } });
    sender.enqueue(trace());
    await sender.flush();
    const [first, retry] = service.received;
    expect(retry!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(950);
  });

  it("retries 503s and dropped connections with backoff until the service takes the trace", async () => {
    startSender();
    service.answers.push({ status: 503, body: { error: "Service unavailable", retry_after: 0 } }, "reset", "reset");
    sender.enqueue(trace());
    expect(await sender.flush()).toBe(true);
    expect(service.received).toHaveLength(4);
    expect(new Set(service.received.map((r) => r.headers["idempotency-key"])).size).toBe(1);
    expect(sender.stats()).toMatchObject({ sent: 1, failed: 0 });
  });

  it("gives up after maxAttempts and warns once", async () => {
    startSender({ concurrency: 1 }); // one request in flight: every attempt reaches the server
    service.answers.push("reset", "reset", "reset", "reset", "reset", "reset", "reset", "reset");
    sender.enqueue(trace(1));
    sender.enqueue(trace(2));
    expect(await sender.flush()).toBe(true);
    expect(service.received).toHaveLength(8);
    expect(sender.stats()).toMatchObject({ sent: 0, failed: 2 });
    expect(warnings).toEqual([expect.stringContaining("could not reach")]);
  });

  it("treats a service that does not answer in time as a network error", async () => {
    startSender({ requestTimeoutMs: 100 });
    service.answers.push("hang");
    sender.enqueue(trace());
    expect(await sender.flush()).toBe(true);
    expect(service.received).toHaveLength(2);
    expect(sender.stats().sent).toBe(1);
  });

  it.each([
    [400, { error: "Validation error", details: "tokens_in: must be an integer >= 0" }, "tokens_in: must be"],
    [401, { error: "Unauthorized", message: "Invalid API key" }, "rejected the API key"],
    [413, { error: "Payload too large", details: "limit 65536 bytes" }, "413"],
    [415, { error: "Unsupported media type", details: "use application/json" }, "415"],
  ])("does not retry a %i, and warns once without the key", async (status, body, warning) => {
    startSender();
    service.answers.push({ status, body }, { status, body });
    sender.enqueue(trace());
    sender.enqueue(trace());
    expect(await sender.flush()).toBe(true);
    expect(service.received).toHaveLength(2);
    expect(sender.stats()).toMatchObject({ sent: 0, failed: 2 });
    expect(warnings).toEqual([expect.stringContaining(warning)]);
    expect(warnings.join()).not.toContain(TEST_KEY);
  });

  it("does not wait for a spent monthly quota", async () => {
    startSender();
    service.answers.push({ status: 429, body: { error: "Monthly quota exceeded", retry_after: 864_000 } });
    sender.enqueue(trace());
    expect(await sender.flush()).toBe(true);
    expect(service.received).toHaveLength(1);
    expect(warnings).toEqual([expect.stringContaining("Monthly quota exceeded")]);
  });
});

describe("the queue", () => {
  it("drops the oldest traces when full and counts them", async () => {
    startSender({ queueSize: 3, concurrency: 1 });
    service.answers.push("hang");
    sender.enqueue(trace(0));
    await service.waitFor(1); // trace 0 is in flight, the queue is empty
    for (let n = 1; n <= 10; n++) sender.enqueue(trace(n));
    expect(sender.stats()).toMatchObject({ dropped: 7, pending: 4 });
    sender.close();
    expect(sender.stats()).toMatchObject({ dropped: 10 });
  });
});

describe("flush", () => {
  it("waits until the service has taken every trace", async () => {
    startSender();
    service.answers.push({ status: 202, body: { status: "ok" }, delayMs: 300 });
    sender.enqueue(trace());
    const started = Date.now();
    expect(await sender.flush()).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    expect(sender.stats()).toMatchObject({ sent: 1, pending: 0 });
  });

  it("resolves false when its timeout passes first, and close() then abandons the rest", async () => {
    startSender();
    service.answers.push("hang");
    sender.enqueue(trace());
    expect(await sender.flush(200)).toBe(false);
    sender.close();
    expect(await sender.flush(1_000)).toBe(true);
    expect(sender.stats()).toMatchObject({ sent: 0, dropped: 1, pending: 0 });
  });

  it("resolves at once when nothing is pending", async () => {
    startSender();
    expect(await sender.flush(1)).toBe(true);
  });
});
