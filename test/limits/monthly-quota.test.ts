import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { pino } from "pino";
import { memoryBackend, redisBackend } from "../../src/limits/limiter-backend.js";
import { createMonthlyQuota, QuotaUnavailableError } from "../../src/limits/monthly-quota.js";
import { openLimits } from "../../src/limits/open-limits.js";
import { createMetrics } from "../../src/observability/metrics.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { RedisHealth } from "../../src/limits/redis-health.js";
import { type RedisTestServer, startRedis } from "../support/redis-server.js";
import { postTrace, startTestService, traceBody } from "../support/test-service.js";
import { tempDir } from "../support/temp-dir.js";

const plan = { name: "metered", perMinute: 100, perMonth: 2, maxKeys: 10 };
const key = { id: "key_month", accountId: "acc_month" };

describe("monthly quota counters (D11)", () => {
  const backends = {
    "in-process": async () => ({ backend: memoryBackend(), done: async () => {} }),
    Redis: async () => {
      const redis = await startRedis();
      const health: RedisHealth = { insuranceUsed: () => {}, degradation: () => undefined };
      // Connected first: until then the in-process insurance answers, and these are Redis's counts.
      const client = redis.client();
      await client.ping();
      return { backend: redisBackend({ redis: client, timeoutMs: 1000, health }), done: () => redis.close() };
    },
  };
  for (const [name, open] of Object.entries(backends)) {
    it(`${name}: a new calendar month (UTC) restores the quota; the counter starts from the traces already stored`, async () => {
      const { backend, done } = await open();
      try {
        let clock = Date.UTC(2026, 0, 31, 23, 59, 58);
        const seeds: string[] = [];
        const quota = createMonthlyQuota({
          backend,
          countTimeoutMs: 1000,
          now: () => clock,
          countStored: async (_key, since) => {
            seeds.push(since.toISOString());
            return since.getUTCMonth() === 0 ? 1 : 0; // one trace already stored in January
          },
        });
        const first = await quota.reserve(key, plan);
        expect(first.decision).toMatchObject({ allowed: true, limit: 2, remaining: 0, resetAt: Date.UTC(2026, 1, 1) / 1000, retryAfter: 2 });
        const refused = await quota.reserve(key, plan);
        expect(refused.decision.allowed).toBe(false);
        clock = Date.UTC(2026, 1, 1, 0, 0, 1);
        const february = await quota.reserve(key, plan);
        expect(february.decision).toMatchObject({ allowed: true, remaining: 1, resetAt: Date.UTC(2026, 2, 1) / 1000 });
        await february.release();
        expect((await quota.reserve(key, plan)).decision.remaining).toBe(1);
        expect(seeds).toEqual(["2026-01-01T00:00:00.000Z", "2026-02-01T00:00:00.000Z"]);
      } finally {
        await done();
      }
    });

    it(`${name}: reservations racing the rebuild of a month's counter wait for it, so a slow count admits nothing beyond the plan`, async () => {
      const { backend, done } = await open();
      try {
        // 1,990 of 2,000 already stored, counted slowly (a restart with a large store).
        const quota = createMonthlyQuota({ backend, countTimeoutMs: 5000, countStored: () => new Promise((resolve) => setTimeout(() => resolve(1990), 300)) });
        const big = { ...plan, perMonth: 2000 };
        const decisions = await Promise.all(Array.from({ length: 50 }, () => quota.reserve(key, big).then((r) => r.decision)));
        expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
      } finally {
        await done();
      }
    });

    it(`${name}: a count of the stored traces past its time limit fails the reservation; the next one rebuilds the counter`, async () => {
      const { backend, done } = await open();
      try {
        let counts = 0;
        const quota = createMonthlyQuota({
          backend,
          countTimeoutMs: 200,
          countStored: () => (++counts === 1 ? new Promise<number>(() => {}) : Promise.resolve(1)),
        });
        const started = performance.now();
        await expect(quota.reserve(key, plan)).rejects.toBeInstanceOf(QuotaUnavailableError);
        expect(performance.now() - started).toBeLessThan(1000);
        expect((await quota.reserve(key, plan)).decision).toMatchObject({ allowed: true, remaining: 0 });
        expect(counts).toBe(2);
      } finally {
        await done();
      }
    });

    it(`${name}: many traces at once get what is left of the month, and give back only what they were granted`, async () => {
      const { backend, done } = await open();
      try {
        const quota = createMonthlyQuota({ backend, countStored: async () => 0, countTimeoutMs: 1000 });
        const big = { ...plan, perMonth: 5 };
        const first = await quota.reserve(key, big, 3);
        expect(first.decision).toMatchObject({ allowed: true, granted: 3, remaining: 2 });
        const second = await quota.reserve(key, big, 4);
        expect(second.decision).toMatchObject({ allowed: true, granted: 2, remaining: 0 });
        expect((await quota.reserve(key, big, 2)).decision).toMatchObject({ allowed: false, granted: 0, remaining: 0 });
        await second.release(1);
        await second.release(5); // only the one still held
        const third = await quota.reserve(key, big, 4);
        expect(third.decision).toMatchObject({ allowed: true, granted: 2, remaining: 0 });
      } finally {
        await done();
      }
    });
  }

  it("Redis killed mid-month: the quota counts on in process from the count Redis last gave; back empty, its counter is seeded again from the stored traces", async () => {
    const redis = await startRedis();
    try {
      const client = redis.client();
      const health: RedisHealth = { insuranceUsed: () => {}, degradation: () => undefined };
      let stored = 5;
      const quota = createMonthlyQuota({ backend: redisBackend({ redis: client, timeoutMs: 200, health }), countTimeoutMs: 1000, countStored: async () => stored });
      const ten = { ...plan, perMonth: 10 };
      const remaining = async () => {
        const { decision } = await quota.reserve(key, ten);
        if (decision.allowed) stored++;
        return decision.allowed ? decision.remaining : "refused";
      };
      expect([await remaining(), await remaining(), await remaining()]).toEqual([4, 3, 2]);
      await redis.kill();
      expect([await remaining(), await remaining(), await remaining()]).toEqual([1, 0, "refused"]);
      await redis.start();
      for (let i = 0; client.status !== "ready"; i++) {
        expect(i, "the client reconnects").toBeLessThan(100);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(await client.exists(`ct:quota:${ten.name}:${key.id}:${new Date().toISOString().slice(0, 7)}`)).toBe(0);
      expect(await remaining()).toBe("refused");
      expect(stored).toBe(10);
    } finally {
      await redis.close();
    }
  });

  it("a give-back Redis cannot take (Redis stopped) is logged by the key's id and counted in /metrics, not lost silently", async () => {
    const redis = await startRedis();
    const store = openSqliteStore(tempDir());
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(line) });
    const metrics = createMetrics();
    const limits = openLimits({ redisUrl: redis.url, redisTimeoutMs: 200, writeTimeoutMs: 1000 }, store, logger, { metrics });
    try {
      await limits.connected(5000);
      const reservation = await limits.quota.reserve(key, { ...plan, perMonth: 10 });
      expect(reservation.decision).toMatchObject({ allowed: true, remaining: 9 });
      await redis.kill();
      // The write was answered before its commit, which then did not store the trace: its reservation goes back.
      reservation.whenCommitted(Promise.resolve(false));
      const lost = () => lines.map((line) => JSON.parse(line)).find((entry) => String(entry.msg).startsWith("monthly quota: traces not given back"));
      for (const until = Date.now() + 5000; !lost() && Date.now() < until; ) await new Promise((r) => setTimeout(r, 20));
      expect(lost()).toMatchObject({ level: 40, keyId: key.id, traces: 1 });
      expect(lost().err.message).toContain("the shared counter did not take back 1");
      expect((await metrics.scrape()).body).toMatch(/^calltrace_quota_give_backs_lost_total 1$/m);
    } finally {
      await limits.close();
      await store.close();
      await redis.close();
    }
  });

  it("Redis emptied while a process holds reservations: it adds them to the counter another process rebuilt without them, whose reservation waits for them", async () => {
    const redis = await startRedis();
    try {
      let stored = 5;
      const { clients, a, b } = await twoProcesses(redis, () => stored);
      const ten = { ...plan, perMonth: 10 };
      const counter = `ct:quota:${ten.name}:${key.id}:${new Date().toISOString().slice(0, 7)}`;
      const inFlight = await a.reserve(key, ten, 2);
      const givenBack = await a.reserve(key, ten);
      expect(givenBack.decision.remaining).toBe(2);
      await clients[0]!.flushall();
      // b rebuilds the counter from the 5 stored traces: a's three in flight are not among them,
      // and b's reservation on the new counter waits until a's check has added them (5 + 3 + 1).
      const fromB = await b.reserve(key, ten);
      expect(fromB.decision.remaining).toBe(1);
      expect(Number(await clients[0]!.get(counter))).toBe(9);
      stored += 1;
      fromB.stored();
      await givenBack.release();
      expect(Number(await clients[0]!.get(counter))).toBe(8);
      stored += 2;
      inFlight.stored();
      expect((await a.reserve(key, ten)).decision.remaining).toBe(1);
      stored += 1;
      expect((await b.reserve(key, ten)).decision.remaining).toBe(0);
      expect((await b.reserve(key, ten)).decision.allowed).toBe(false);
      expect(Number(await clients[0]!.get(counter))).toBe(10);
    } finally {
      await redis.close();
    }
  });

  it("Redis emptied while a process holds a reservation and gets no more requests for the key: it adds the reservation to the rebuilt counter within a check", async () => {
    const redis = await startRedis();
    try {
      const { clients, a, b } = await twoProcesses(redis, () => 0);
      const counter = `ct:quota:${plan.name}:${key.id}:${new Date().toISOString().slice(0, 7)}`;
      await a.reserve(key, plan);
      await clients[0]!.flushall();
      // b's reservation waits for a's in flight on the rebuilt counter: the plan's two are taken.
      expect((await b.reserve(key, plan)).decision.remaining).toBe(0);
      const deadline = Date.now() + 2000;
      while (Number(await clients[0]!.get(counter)) < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(Number(await clients[0]!.get(counter))).toBe(2);
      expect((await b.reserve(key, plan)).decision.allowed).toBe(false);
    } finally {
      await redis.close();
    }
  });

  it("embedded mode: the month's count survives a restart of the service", async () => {
    const dataDir = tempDir();
    const plans = { metered: { per_minute: 100, per_month: 3 } };
    const first = await startTestService({ dataDir, plans });
    const { key: apiKey } = await first.createKey("metered");
    for (let i = 0; i < 2; i++) expect((await postTrace(first.url, traceBody(apiKey), { key: apiKey })).status).toBe(202);
    await first.close(1000);
    const second = await startTestService({ dataDir, plans });
    const third = await postTrace(second.url, traceBody(apiKey), { key: apiKey });
    expect(third.status).toBe(202);
    expect(third.headers.get("x-quota-remaining")).toBe("0");
    expect((await postTrace(second.url, traceBody(apiKey), { key: apiKey })).status).toBe(429);
  });

  it("a trace answered 503 while its commit was under way, then stored, counts toward the month: the next traces are refused", async () => {
    const plans = { metered: { per_minute: 100, per_month: 3 } };
    const service = await startTestService({ plans, writeTimeoutMs: 300 });
    const { key: apiKey } = await service.createKey("metered");
    const storedCount = async () => {
      let stored = 0;
      for await (const _ of service.store.exportTraces({})) stored++;
      return stored;
    };
    // Another connection holds the write lock: the writer's commit waits past the requests' time.
    const locker = new Database(join(service.config.dataDir, "calltrace.db"));
    locker.exec("BEGIN EXCLUSIVE");
    let unlocked = false;
    try {
      const held = await Promise.all(Array.from({ length: 3 }, () => postTrace(service.url, traceBody(apiKey), { key: apiKey }).then((r) => r.status)));
      expect(held).toEqual([503, 503, 503]);
      locker.exec("COMMIT");
      unlocked = true;
      // The commit under way when they were answered goes through once the lock is gone.
      for (const until = Date.now() + 5000; (await storedCount()) < 3 && Date.now() < until; ) await new Promise((r) => setTimeout(r, 50));
      expect(await storedCount()).toBe(3);
    } finally {
      if (!unlocked) locker.exec("ROLLBACK");
      locker.close();
    }
    const after = await Promise.all(Array.from({ length: 3 }, () => postTrace(service.url, traceBody(apiKey), { key: apiKey }).then((r) => r.status)));
    expect(after).toEqual([429, 429, 429]);
    expect(await storedCount()).toBe(3);
  });
});

/** Two processes' monthly quotas on one Redis, counting one store of `stored()` traces. */
async function twoProcesses(redis: RedisTestServer, stored: () => number) {
  const health: RedisHealth = { insuranceUsed: () => {}, degradation: () => undefined };
  const clients = [redis.client(), redis.client()];
  await Promise.all(clients.map((client) => client.ping()));
  const [a, b] = clients.map((client) =>
    createMonthlyQuota({ backend: redisBackend({ redis: client, timeoutMs: 1000, health }), countTimeoutMs: 1000, countStored: async () => stored() }),
  );
  return { clients, a: a!, b: b! };
}
