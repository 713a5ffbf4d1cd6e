import { request } from "node:http";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startServiceProcess, type ServiceProcess } from "../support/cli.js";
import { startMongoTestServer, type MongoTestServer } from "../support/ferretdb.js";
import { storedCounts } from "../support/mongo-service.js";
import { startRedis, type RedisTestServer } from "../support/redis-server.js";
import { traceBody } from "../support/test-service.js";
import { tempDir } from "../support/temp-dir.js";

/** A plan whose month holds 2,000 traces, and whose per-minute limit no test load reaches. */
const perMonth = 2000;
const storedBefore = 1990;
const plans = { monthly: { per_minute: 1_000_000, per_month: perMonth } };

/** One POST on a connection of its own (so the workers of `--workers N` share them); answers the status. */
function post(url: string, key: string, idempotencyKey?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/traces`, {
      method: "POST",
      agent: false,
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        connection: "close",
        ...(idempotencyKey ? { "idempotency-key": idempotencyKey } : {}),
      },
    });
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode!));
    });
    req.on("error", reject);
    req.end(JSON.stringify(traceBody(key)));
  });
}

/** Sends `total` traces through `urls` in turn, `concurrency` at a time; answers the statuses. */
async function load(urls: string[], key: string, total: number, concurrency: number): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) statuses.push(await post(urls[next++ % urls.length]!, key));
    }),
  );
  return statuses;
}

/** Stores `total` traces through `urls`, each retried with its Idempotency-Key until it is accepted. */
async function fill(urls: string[], key: string, total: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (next < total) {
        const n = next++;
        for (let tries = 0; (await post(urls[n % urls.length]!, key, `fill-${n}`)) !== 202; tries++) {
          expect(tries, `trace ${n} of the fill`).toBeLessThan(20);
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    }),
  );
}

const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;

/**
 * A MongoDB database with the plan and one key on it. The MongoDB store, because its rebuild of a
 * month's count can take a while: in a database upgraded this month (`trace_counts_since` after
 * the month's start) the traces before the upgrade are counted from the traces themselves, which
 * FerretDB does by reading every one. That is when a process racing another's rebuild was admitted.
 */
function setup(uri: string) {
  const dataDir = tempDir();
  const plansFile = join(dataDir, "plans.json");
  writeFileSync(plansFile, JSON.stringify(plans));
  const args = ["--mongodb-uri", uri, "--data-dir", dataDir, "--plans-file", plansFile];
  const key = runCli(["keys", "create", "--plan", "monthly", ...args]).trim();
  const storedTraces = async () => [...(await storedCounts(uri)).values()].reduce((a, b) => a + b, 0);
  /** Makes the stored traces ones from before an upgrade: their count is read from the traces at the next start. */
  const upgraded = async () => {
    const client = await MongoClient.connect(uri);
    try {
      await client.db().collection("trace_counts").deleteMany({});
      await client.db().collection<{ _id: string; value: Date }>("settings").updateOne({ _id: "trace_counts_since" }, { $set: { value: new Date() } });
    } finally {
      await client.close();
    }
  };
  return { args, key, storedTraces, upgraded };
}

async function stop(service: ServiceProcess): Promise<void> {
  service.child.kill("SIGTERM");
  await service.exited;
}

async function listeningWorkers(service: ServiceProcess, workers: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (service.lines.filter((l) => l.includes('"msg":"listening"')).length < workers && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
}

let redis: RedisTestServer;
let mongo: MongoTestServer;
beforeAll(async () => {
  [redis, mongo] = await Promise.all([startRedis(), startMongoTestServer()]);
});
afterAll(async () => {
  await Promise.all([redis?.close(), mongo?.close()]);
});

/**
 * The exact counts below are the guarantee while the counter answers. Its documented exceptions
 * (docs/operations.md) are a Redis slower than REDIS_TIMEOUT_MS and a `--workers` primary that
 * stalls past a second (D24): each process then counts on alone, and two processes each admit
 * what is left (20 of 10 with Redis paused for 100 ms against the default 50 ms). So these tests
 * give Redis 5 s and writes 30 s, however busy the machine (a slower count or commit is a 503,
 * D33), and a test whose limits were degraded says so rather than miscounting.
 */
const patientEnv = { REDIS_TIMEOUT_MS: "5000", WRITE_TIMEOUT_MS: "30000" };
const degraded = (services: ServiceProcess[]) =>
  services.flatMap((s) => s.lines).filter((line) => /"msg":"(limits degraded|the cluster primary did not answer in time[^"]*)"/.test(line));

const admittedAndRefused = (statuses: number[]) => ({ admitted: count(statuses, 202), refused: count(statuses, 429), other: statuses.length - count(statuses, 202) - count(statuses, 429) });
const exactly = (total: number) => ({ admitted: perMonth - storedBefore, refused: total - (perMonth - storedBefore), other: 0 });

describe("the monthly quota across processes after its counter is lost (issue 16, fault 3)", () => {
  it("two service processes restarted on one Redis that restarted empty admit exactly what is left of the month under concurrent load", async () => {
    const { args, key, storedTraces, upgraded } = setup(mongo.freshUri());
    const env = { REDIS_URL: redis.url, ...patientEnv };
    const before = await Promise.all([startServiceProcess(args, env), startServiceProcess(args, env)]);
    try {
      await fill(before.map((s) => s.url), key, storedBefore);
    } finally {
      await Promise.all(before.map(stop));
    }
    await upgraded();
    // Redis loses every counter (a restart without persistence); the traces stay stored.
    await redis.client().flushall();
    const after = await Promise.all([startServiceProcess(args, env), startServiceProcess(args, env)]);
    try {
      const statuses = await load(after.map((s) => s.url), key, 200, 40);
      expect(degraded(after)).toEqual([]);
      expect(admittedAndRefused(statuses)).toEqual(exactly(200));
    } finally {
      await Promise.all(after.map(stop));
    }
    expect(await storedTraces()).toBe(perMonth);
  }, 120_000);

  it("two service processes whose Redis is emptied again and again under concurrent load store no more than the month's quota", async () => {
    const { args, key, storedTraces } = setup(mongo.freshUri());
    const env = { REDIS_URL: redis.url, ...patientEnv };
    const services = await Promise.all([startServiceProcess(args, env), startServiceProcess(args, env)]);
    try {
      await fill(services.map((s) => s.url), key, storedBefore);
      // For 2 s, every 20 ms Redis loses the counter while traces are reserved but not yet
      // stored: a seeder counting the stored traces then misses them. Then the load goes on
      // against the last rebuilt counter: on a quiet machine the first load can end inside the
      // 2 s, every one of its requests meeting a lost counter.
      const flushes = (async () => {
        const client = redis.client();
        for (const until = Date.now() + 2000; Date.now() < until; ) {
          await client.flushall();
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      const urls = services.map((s) => s.url);
      const statuses = await load(urls, key, 400, 40);
      await flushes;
      statuses.push(...(await load(urls, key, 40, 40)));
      expect(degraded(services)).toEqual([]);
      // A counter lost between its seed and the reservation is a 503 (safe to retry); nothing else fails.
      expect(count(statuses, 202) + count(statuses, 429) + count(statuses, 503)).toBe(statuses.length);
      expect(count(statuses, 202)).toBeGreaterThan(0);
    } finally {
      await Promise.all(services.map(stop));
    }
    // 2,006 to 2,030 before each process added its traces in flight to the rebuilt counter (D40).
    expect(await storedTraces()).toBeLessThanOrEqual(perMonth);
  }, 120_000);

  it("serve --workers 2 restarted with 1,990 of 2,000 traces stored admits exactly 10 under concurrent load on both workers", async () => {
    const { args, key, storedTraces, upgraded } = setup(mongo.freshUri());
    const first = await startServiceProcess(["--workers", "2", ...args], patientEnv);
    try {
      await listeningWorkers(first, 2);
      await fill([first.url], key, storedBefore);
    } finally {
      await stop(first);
    }
    await upgraded();
    const second = await startServiceProcess(["--workers", "2", ...args], patientEnv);
    try {
      await listeningWorkers(second, 2);
      const statuses = await load([second.url], key, 200, 40);
      expect(degraded([second])).toEqual([]);
      expect(admittedAndRefused(statuses)).toEqual(exactly(200));
    } finally {
      await stop(second);
    }
    expect(await storedTraces()).toBe(perMonth);
  }, 120_000);
});
