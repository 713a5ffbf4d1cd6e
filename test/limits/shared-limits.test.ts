import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { TraceService } from "../../gen/calltrace/v1/trace_service_pb.js";
import { startRedis, type RedisTestServer } from "../support/redis-server.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";
import { tempDir } from "../support/temp-dir.js";

const plans = {
  free: { per_minute: 100, per_month: 50_000 },
  pro: { per_minute: 1000, per_month: 500_000 },
  tiny: { per_minute: 10, per_month: 1_000 },
  metered: { per_minute: 1000, per_month: 3 },
  narrow: { per_minute: 1, per_month: 5 },
};

let redis: RedisTestServer;
let a: TestService;
let b: TestService;

beforeAll(async () => {
  redis = await startRedis();
  const dataDir = tempDir();
  // Two instances on one Redis and one DATA_DIR, as behind a load balancer. What is tested here is
  // the sharing: a first call slower than the default 50 ms on a busy machine would be answered by
  // the in-process insurance instead (redis-faults.test.ts tests that), and its count would be off.
  const shared = { redisUrl: redis.url, redisTimeoutMs: 5000, dataDir, plans, trustProxy: true };
  a = await startTestService(shared);
  b = await startTestService(shared);
});
afterAll(async () => {
  await redis.close();
});

describe("per-minute limits on Redis (D10, D19)", () => {
  it("free and pro keys get their plan's limit in the headers, over REST and gRPC", async () => {
    for (const [plan, limit] of [
      ["free", "100"],
      ["pro", "1000"],
    ] as const) {
      const { key } = await a.createKey(plan);
      const rest = await postTrace(a.url, traceBody(key), { key });
      expect(rest.status).toBe(202);
      expect(rest.headers.get("x-ratelimit-limit")).toBe(limit);
      expect(rest.headers.get("x-ratelimit-remaining")).toBe(String(Number(limit) - 1));
      let headers: Headers | undefined;
      const client = createClient(TraceService, createGrpcTransport({ baseUrl: b.url }));
      await client.ingest({ trace: grpcTrace(key) }, { headers: { authorization: `Bearer ${key}` }, onHeader: (h) => (headers = h) });
      expect(headers?.get("x-ratelimit-limit")).toBe(limit);
      expect(headers?.get("x-ratelimit-remaining")).toBe(String(Number(limit) - 2));
    }
  });

  it("two instances on one Redis together admit exactly the plan's per-minute limit", async () => {
    const { key } = await a.createKey("tiny");
    const statuses = await Promise.all(
      Array.from({ length: 24 }, (_, i) => postTrace(i % 2 ? a.url : b.url, traceBody(key), { key }).then((r) => r.status)),
    );
    expect(statuses.filter((s) => s === 202)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(14);
  });

  it("a window that ends admits again", async () => {
    const { key, id } = await a.createKey("tiny");
    for (let i = 0; i < 10; i++) expect((await postTrace(a.url, traceBody(key), { key })).status).toBe(202);
    expect((await postTrace(b.url, traceBody(key), { key })).status).toBe(429);
    // End the window now instead of waiting a minute: the counter is the Redis key the limiter keeps.
    const client = redis.client();
    expect(await client.del(`ct:rl:tiny:${id}`)).toBe(1);
    const again = await postTrace(b.url, traceBody(key), { key });
    expect(again.status).toBe(202);
    expect(again.headers.get("x-ratelimit-remaining")).toBe("9");
  });
});

describe("monthly quota (D11)", () => {
  it("the trace past the quota gets 429 'Monthly quota exceeded' with retry_after to the month's end", async () => {
    const { key } = await a.createKey("metered");
    for (let i = 0; i < 3; i++) {
      const ok = await postTrace(i % 2 ? a.url : b.url, traceBody(key), { key });
      expect(ok.status).toBe(202);
      expect(ok.headers.get("x-quota-limit")).toBe("3");
      expect(ok.headers.get("x-quota-remaining")).toBe(String(2 - i));
    }
    const over = await postTrace(a.url, traceBody(key), { key });
    expect(over.status).toBe(429);
    const body = (await over.json()) as { error: string; retry_after: number };
    const now = new Date();
    const nextMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
    expect(body.error).toBe("Monthly quota exceeded");
    expect(Math.abs(body.retry_after - (nextMonth - Date.now()) / 1000)).toBeLessThan(5);
    expect(over.headers.get("retry-after")).toBe(String(body.retry_after));
    expect(over.headers.get("x-quota-remaining")).toBe("0");
    expect(over.headers.get("x-quota-reset")).toBe(String(nextMonth / 1000));
    expect(over.headers.get("x-ratelimit-limit")).toBe("1000");
  });

  it("invalid traces do not count against the quota", async () => {
    const { key } = await a.createKey("metered");
    for (let i = 0; i < 5; i++) expect((await postTrace(a.url, traceBody(key, { tokens_in: -1 }), { key })).status).toBe(400);
    for (let i = 0; i < 3; i++) expect((await postTrace(b.url, traceBody(key), { key })).status).toBe(202);
  });

  it("requests refused before their trace is accepted (too large, not JSON, wrong type, rate-limited) do not count", async () => {
    const { key } = await a.createKey("metered");
    const refused = [
      postTrace(a.url, undefined, { key, raw: JSON.stringify({ ...traceBody(key), model: "x".repeat(70_000) }) }),
      postTrace(b.url, undefined, { key, raw: "{not json" }),
      postTrace(a.url, traceBody(key), { key, headers: { "content-type": "text/plain" } }),
    ];
    expect((await Promise.all(refused)).map((r) => r.status)).toEqual([413, 400, 415]);
    for (let i = 0; i < 3; i++) {
      const ok = await postTrace(i % 2 ? a.url : b.url, traceBody(key), { key });
      expect(ok.status).toBe(202);
      expect(ok.headers.get("x-quota-remaining")).toBe(String(2 - i));
    }

    const narrow = await a.createKey("narrow");
    expect((await postTrace(a.url, traceBody(narrow.key), { key: narrow.key })).status).toBe(202);
    for (let i = 0; i < 3; i++) expect((await postTrace(i % 2 ? a.url : b.url, traceBody(narrow.key), { key: narrow.key })).status).toBe(429);
    // The month's counter in Redis holds the one stored trace, not the refused ones.
    const month = new Date().toISOString().slice(0, 7);
    expect(await redis.client().get(`ct:quota:narrow:${narrow.id}:${month}`)).toBe("1");
  });

  it("retries with the same Idempotency-Key get the same answer, are stored once and counted once (D14)", async () => {
    const { key, id } = await a.createKey("metered");
    const headers = { "idempotency-key": "quota-retry-1" };
    for (let i = 0; i < 3; i++) expect((await postTrace(i % 2 ? a.url : b.url, traceBody(key), { key, headers })).status).toBe(202);
    expect((await postTrace(a.url, traceBody(key), { key })).status).toBe(202);
    const last = await postTrace(b.url, traceBody(key), { key });
    expect(last.status).toBe(202);
    expect(last.headers.get("x-quota-remaining")).toBe("0");
    expect((await postTrace(a.url, traceBody(key), { key })).status).toBe(429);
    let stored = 0;
    for await (const t of a.store.exportTraces({})) if (t.keyId === id) stored++;
    expect(stored).toBe(3);
  });

  it("gRPC callers get RESOURCE_EXHAUSTED 'Monthly quota exceeded' with a RetryInfo to the month's end", async () => {
    const { key } = await a.createKey("metered");
    const client = createClient(TraceService, createGrpcTransport({ baseUrl: a.url }));
    for (let i = 0; i < 3; i++) await client.ingest({ trace: grpcTrace(key) }, { headers: { authorization: `Bearer ${key}` } });
    const error = await client.ingest({ trace: grpcTrace(key) }, { headers: { authorization: `Bearer ${key}` } }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error?.code).toBe(Code.ResourceExhausted);
    expect(error?.rawMessage).toBe("Monthly quota exceeded");
    expect(Number(error?.findDetails(RetryInfoSchema)[0]?.retryDelay?.seconds)).toBeGreaterThan(0);
    expect(error?.metadata.get("x-quota-limit")).toBe("3");
  });
});

describe("failed authentication per client address (D12)", () => {
  it("the 31st bad key from one address in a minute gets 429; a valid key from that address still gets 202", async () => {
    const from = { "x-forwarded-for": "203.0.113.77" };
    const bad = `ct_${"Q".repeat(40)}`;
    for (let i = 0; i < 30; i++) {
      const response = await postTrace(i % 2 ? a.url : b.url, traceBody(bad), { key: bad, headers: from });
      expect(response.status).toBe(401);
    }
    const blocked = await postTrace(a.url, traceBody(bad), { key: bad, headers: from });
    expect(blocked.status).toBe(429);
    const body = (await blocked.json()) as { error: string; retry_after: number };
    expect(body.error).toBe("Rate limit exceeded");
    expect(body.retry_after).toBeGreaterThanOrEqual(1);
    expect(body.retry_after).toBeLessThanOrEqual(60);
    expect((await postTrace(b.url, undefined, { headers: from, raw: "{}" })).status).toBe(429);
    const { key } = await a.createKey("free");
    expect((await postTrace(b.url, traceBody(key), { key, headers: from })).status).toBe(202);
    // Another address is not affected.
    expect((await postTrace(a.url, traceBody(bad), { key: bad, headers: { "x-forwarded-for": "198.51.100.9" } })).status).toBe(401);
  });
});

describe("revocation reaches every instance (D20)", () => {
  it("a key revoked through one instance's store is refused by the other within 5 seconds", async () => {
    const { key, id } = await a.createKey("free");
    expect((await postTrace(b.url, traceBody(key), { key })).status).toBe(202);
    await a.store.keys.revokeKey(id);
    const revokedAt = Date.now();
    let status = 202;
    while (status === 202 && Date.now() - revokedAt < 6000) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await postTrace(b.url, traceBody(key), { key })).status;
    }
    expect(status).toBe(401);
    expect(Date.now() - revokedAt).toBeLessThan(5000);
  });
});

function grpcTrace(apiKey: string) {
  return { provider: "gemini", model: "gemini-2.5-flash", tokensIn: 10, tokensOut: 20, latencyMs: 300, costUsd: 0.0000095, apiKey, status: "success" };
}
