import { Agent, request } from "node:http";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, type ServiceProcess, startServiceProcess } from "../support/cli.js";
import { startRedis, type RedisTestServer } from "../support/redis-server.js";
import { traceBody } from "../support/test-service.js";
import { tempDir } from "../support/temp-dir.js";

/*
 * Under load the limits coalesce: the requests of one event-loop turn for the same key are one
 * Redis call for all of them. Two service processes on one Redis, a burst of concurrent requests
 * each: the counts stay exact, and every admitted request got its own place in the count.
 */

const plans = {
  fifty: { per_minute: 50, per_month: 1_000_000 },
  sixty: { per_minute: 1_000_000, per_month: 60 },
  roomy: { per_minute: 1_000_000, per_month: 1_000_000 },
};

let redis: RedisTestServer;
let dataDir: string;
let plansFile: string;
const services: ServiceProcess[] = [];
/** 50 keep-alive connections to each process, opened before the bursts. */
let agents: Agent[];

beforeAll(async () => {
  redis = await startRedis();
  dataDir = tempDir();
  plansFile = join(dataDir, "plans.json");
  writeFileSync(plansFile, JSON.stringify(plans));
  // Redis on a busy test machine may take longer than the 50 ms default to answer a burst; then the
  // in-process insurance would count (the documented degradation, redis-faults.test.ts), not Redis.
  const env = { REDIS_URL: redis.url, REDIS_TIMEOUT_MS: "5000" };
  for (let i = 0; i < 2; i++) services.push(await startServiceProcess(["--data-dir", dataDir, "--plans-file", plansFile], env));
  agents = services.map(() => new Agent({ keepAlive: true, maxSockets: 50 }));
  const warm = keyOf("roomy");
  expect((await burst(warm.key, 100)).every((a) => a.status === 202)).toBe(true);
}, 60_000);
afterAll(async () => {
  for (const agent of agents) agent.destroy();
  for (const service of services) {
    service.child.kill("SIGTERM");
    await service.exited;
  }
  await redis.close();
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function post(agent: Agent, url: string, key: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/traces`, {
      method: "POST",
      agent,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    });
    req.on("response", (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end(JSON.stringify(traceBody(key)));
  });
}

/** `count` requests at once, half to each process. */
function burst(key: string, count: number): Promise<Answer[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => post(agents[i % 2]!, services[i % 2]!.url, key)));
}

/** Script calls Redis has run so far (both limiters' counters are Lua scripts). */
async function scriptCalls(): Promise<number> {
  const stats = await redis.client().info("commandstats");
  let calls = 0;
  for (const match of stats.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) calls += Number(match[1]);
  return calls;
}

/** Neither process counted in-process: every decision was Redis's. */
async function bothOnRedis(): Promise<void> {
  for (const service of services) expect(await (await fetch(`${service.url}/readyz`)).json()).toEqual({ status: "ready" });
}

function storedTraces(keyId: string): number {
  return runCli(["traces", "export", "--data-dir", dataDir])
    .trim()
    .split("\n")
    .filter((line) => line.includes(keyId)).length;
}

function keyOf(plan: string): { key: string; id: string } {
  const key = runCli(["keys", "create", "--plan", plan, "--data-dir", dataDir, "--plans-file", plansFile]).trim();
  const listed = runCli(["keys", "list", "--data-dir", dataDir, "--plans-file", plansFile]);
  const id = listed
    .split("\n")
    .find((l) => l.includes(key.slice(0, 10)))
    ?.split(/\s+/)[0];
  if (!id) throw new Error(`no id for the new key in:\n${listed}`);
  return { key, id };
}

/**
 * Exactly `limit` of the answers are 202, each with its own `remaining` (limit - 1 down to 0, once
 * each: no two requests saw the same place in the count); the rest are 429 with `error`, nothing
 * remaining and a Retry-After. Answers the refused.
 */
function exactly(answers: Answer[], limit: number, remaining: string, error: string): Answer[] {
  const admitted = answers.filter((a) => a.status === 202);
  const refused = answers.filter((a) => a.status === 429);
  expect(admitted).toHaveLength(limit);
  expect(refused).toHaveLength(answers.length - limit);
  expect(admitted.map((a) => Number(a.headers[remaining])).sort((x, y) => x - y)).toEqual(Array.from({ length: limit }, (_, i) => i));
  for (const answer of refused) {
    expect(JSON.parse(answer.body)).toMatchObject({ error });
    expect(answer.headers[remaining]).toBe("0");
    expect(Number(answer.headers["retry-after"])).toBeGreaterThanOrEqual(1);
  }
  return refused;
}

describe("limits coalesced per event-loop turn, across two processes on one Redis", () => {
  it("200 concurrent requests against a 50/min key admit exactly 50, each with its own X-RateLimit-Remaining, in under half the Redis calls of one by one", async () => {
    const { key, id } = keyOf("fifty");
    const callsBefore = await scriptCalls();
    const answers = await burst(key, 200);
    const calls = (await scriptCalls()) - callsBefore;

    const refused = exactly(answers, 50, "x-ratelimit-remaining", "Rate limit exceeded");
    for (const answer of refused) expect(Number(answer.headers["retry-after"])).toBeLessThanOrEqual(60);
    // The window's counter holds every request, as one by one; the month's counter only the stored traces.
    expect(Number(await redis.client().get(`ct:rl:fifty:${id}`))).toBe(200);
    const month = new Date().toISOString().slice(0, 7);
    expect(await redis.client().get(`ct:quota:fifty:${id}:${month}`)).toBe("50");
    // One by one this takes 200 window calls, 200 quota reservations and 150 quota take-backs
    // (and the calls that seed the month's counter).
    expect(calls).toBeLessThan(550 / 2);
    expect(storedTraces(id)).toBe(50);
    await bothOnRedis();
  });

  it("200 concurrent requests against a quota of 60 store exactly 60, X-Quota-Remaining from 59 down to 0 once each", async () => {
    const { key, id } = keyOf("sixty");
    const answers = await burst(key, 200);
    exactly(answers, 60, "x-quota-remaining", "Monthly quota exceeded");
    const month = new Date().toISOString().slice(0, 7);
    expect(await redis.client().get(`ct:quota:sixty:${id}:${month}`)).toBe("60");
    expect(storedTraces(id)).toBe(60);
    await bothOnRedis();
  });
});
