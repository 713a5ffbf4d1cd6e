import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRedis, type RedisTestServer } from "../support/redis-server.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";

let redis: RedisTestServer;
let service: TestService;

beforeAll(async () => {
  redis = await startRedis();
  service = await startTestService({
    redisUrl: redis.url,
    plans: { steady: { per_minute: 100_000, per_month: 1_000_000 }, small: { per_minute: 20, per_month: 1_000_000 } },
  });
});
afterAll(async () => {
  await redis.close();
});

async function readiness(): Promise<Record<string, string>> {
  const response = await fetch(`${service.url}/readyz`);
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, string>;
}

/** Polls /readyz until the limits are (or are not) degraded, for at most 15 s. */
async function readinessWhen(degraded: boolean): Promise<Record<string, string>> {
  const since = Date.now();
  let body = await readiness();
  while ((body.limits !== undefined) !== degraded && Date.now() - since < 15_000) {
    await new Promise((r) => setTimeout(r, 100));
    body = await readiness();
  }
  return body;
}

describe("Redis faults (issue: limits across instances)", () => {
  it("Redis killed mid-run: no request fails because of it, the insurance limiter counts, /readyz says so, and Redis is used again once back", async () => {
    const { key, id } = await service.createKey("steady");
    const client = redis.client();
    expect(await readinessWhen(false)).toEqual({ status: "ready" });
    expect((await postTrace(service.url, traceBody(key), { key })).status).toBe(202);
    expect(Number(await client.get(`ct:rl:steady:${id}`))).toBe(1);

    // Keep a stream of requests going while Redis dies and comes back.
    const statuses: number[] = [];
    let running = true;
    const sender = (async () => {
      while (running) statuses.push((await postTrace(service.url, traceBody(key), { key })).status);
    })();
    await new Promise((r) => setTimeout(r, 200));
    await redis.kill();
    const degraded = await readinessWhen(true);
    expect(degraded.status).toBe("ready");
    expect(degraded.limits).toMatch(/in-process/);
    const duringOutage = statuses.length;
    await new Promise((r) => setTimeout(r, 300));
    expect(statuses.length).toBeGreaterThan(duringOutage); // still serving

    await redis.start();
    expect(await readinessWhen(false)).toEqual({ status: "ready" });
    running = false;
    await sender;
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    expect(statuses.every((s) => s === 202)).toBe(true);

    // The restarted Redis is empty: the next request counts there again.
    const fresh = redis.client();
    expect((await postTrace(service.url, traceBody(key), { key })).status).toBe(202);
    expect(Number(await fresh.get(`ct:rl:steady:${id}`))).toBeGreaterThanOrEqual(1);
  });

  it("Redis healthy but slower than REDIS_TIMEOUT_MS: the insurance limiter goes on from the count Redis last gave, so the key's limit still holds", async () => {
    const { key } = await service.createKey("small");
    expect(await readinessWhen(false)).toEqual({ status: "ready" });
    for (let i = 0; i < 12; i++) expect((await postTrace(service.url, traceBody(key), { key })).status).toBe(202);
    // Redis answers nobody for 1 s (as under CPU load), then answers everything it was sent.
    process.kill(redis.pid!, "SIGSTOP");
    const asleep = new Promise((r) => setTimeout(r, 1000)).then(() => process.kill(redis.pid!, "SIGCONT"));
    let statuses: number[];
    try {
      statuses = await Promise.all(Array.from({ length: 15 }, () => postTrace(service.url, traceBody(key), { key }).then((r) => r.status)));
    } finally {
      await asleep;
    }
    // 12 were counted in Redis; of the 15 answered by the insurance limiter, only the 8 left may pass.
    expect(statuses.filter((s) => s === 202)).toHaveLength(8);
    expect(statuses.filter((s) => s === 429)).toHaveLength(7);
  });
});
