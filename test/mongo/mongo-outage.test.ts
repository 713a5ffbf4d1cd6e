import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMongoTestServer, type MongoTestServer } from "../support/ferretdb.js";
import { mongoServiceSetup, storedCounts } from "../support/mongo-service.js";
import { runLoad, type LoadResult } from "../support/trace-load.js";

/** Tests here stop and freeze the server, so they always run their own FerretDB. */
let mongo: MongoTestServer;
beforeAll(async () => {
  mongo = await startMongoTestServer({ managed: true });
});
afterAll(async () => {
  await mongo?.close();
});

const writeTimeoutMs = 1000;
/**
 * No request hangs: each is answered within the write timeout plus the time a loaded two-core
 * test machine needs to get to it (the service's own request timeout is 30 s).
 */
const answerWithinMs = writeTimeoutMs + 9000;

function rssBytes(pid: number): Promise<number> {
  return import("node:fs/promises")
    .then((fs) => fs.readFile(`/proc/${pid}/status`, "utf8"))
    .then((status) => Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024);
}

describe("MongoDB store outage and backpressure (D13)", () => {
  it("answers 503 with retry_after while the server is down, never 202 and never a hang, and recovers by itself", async () => {
    const uri = mongo.freshUri();
    const setup = await mongoServiceSetup(uri);
    const service = await setup.start({ WRITE_TIMEOUT_MS: String(writeTimeoutMs) });
    try {
      type Phase = "up" | "down" | "restarting" | "back";
      let phase: Phase = "up";
      const byPhase: Record<Phase, LoadResult[]> = { up: [], down: [], restarting: [], back: [] };
      let downSince = 0;
      // Results recorded in the down phase before the server process had exited.
      let beforeExit = Number.POSITIVE_INFINITY;
      let restarting: Promise<void> | undefined;
      const results = await runLoad({
        url: () => service.url,
        key: setup.key,
        concurrency: 8,
        timeoutMs: 15_000,
        maxRequests: 20_000,
        onResult: (r) => {
          byPhase[phase].push(r);
          if (phase === "up" && byPhase.up.filter((x) => x.status === 202).length >= 100) {
            phase = "down";
            downSince = Date.now();
            void mongo.kill().then(() => {
              beforeExit = byPhase.down.length;
            });
          } else if (phase === "down" && Date.now() - downSince > 3000 && !restarting) {
            // Answers while the server comes back may be 202s or 503s: neither phase's rule applies.
            phase = "restarting";
            restarting = mongo.start().then(() => {
              phase = "back";
            });
          }
        },
        keepGoing: () => byPhase.back.filter((x) => x.status === 202).length < 100,
      });
      await restarting;

      // While down (after the requests in flight when the server had exited): only 503s with
      // retry_after, each in bounded time. Answers before that may be 202s: those are checked below.
      const settled = byPhase.down.slice(beforeExit + 16);
      expect(settled.length).toBeGreaterThan(0);
      for (const r of settled) {
        expect(r.status, `request ${r.n} while the server was down`).toBe(503);
        expect(r.retryAfter).toBeGreaterThanOrEqual(1);
      }
      for (const r of results) expect(r.ms, `request ${r.n} took ${Math.round(r.ms)} ms`).toBeLessThan(answerWithinMs);
      expect(byPhase.back.filter((r) => r.status === 202).length).toBeGreaterThanOrEqual(100);

      // Every 202 is stored; nothing is stored twice (each trace was sent once).
      const counts = await storedCounts(uri);
      for (const r of results.filter((x) => x.status === 202)) expect(counts.get(r.n), `trace ${r.n} got a 202`).toBe(1);
      for (const count of counts.values()) expect(count).toBe(1);
    } finally {
      service.child.kill("SIGTERM");
      await service.exited;
    }
  });

  it("every answer to a request whose steps each wait on a stalling server comes within about WRITE_TIMEOUT_MS, not the sum of the steps' timeouts", async () => {
    const uri = mongo.freshUri();
    const setup = await mongoServiceSetup(uri);
    const timeoutMs = 1500;
    const service = await setup.start({ WRITE_TIMEOUT_MS: String(timeoutMs) });
    // Frozen most of the time, in spells a little shorter than the timeout: each read of the key
    // (its verification, cached for 2 s, reads the key and then its account) and each write then
    // succeeds just in time, and a request that needs several of them used to take their sum.
    let frozen = false;
    const stall = async () => {
      while (stalling) {
        frozen = !frozen;
        if (frozen) mongo.pause();
        else mongo.resume();
        await new Promise((resolve) => setTimeout(resolve, frozen ? timeoutMs - 100 : 15));
      }
    };
    let stalling = true;
    const stalled = stall();
    let results: LoadResult[] = [];
    try {
      const until = Date.now() + 8000;
      results = await runLoad({ url: () => service.url, key: setup.key, concurrency: 8, timeoutMs: 15_000, keepGoing: () => Date.now() < until });
    } finally {
      stalling = false;
      await stalled;
      mongo.resume();
      service.child.kill("SIGTERM");
      await service.exited;
    }
    const slowest = Math.max(...results.map((r) => r.ms));
    console.log(`${results.length} answers (${results.filter((r) => r.status === 202).length} 202s), slowest ${Math.round(slowest)} ms`);
    for (const r of results) expect([202, 503], `request ${r.n}`).toContain(r.status);
    // The write timeout, plus the sweep's 100 ms and a loaded machine's delays; the sum of two
    // steps' timeouts is 3000 ms.
    expect(slowest).toBeLessThan(timeoutMs + 700);
  }, 60_000);

  it("with a small queue and a slowed server, overflow gets 503 at once and memory stays bounded", async () => {
    const uri = mongo.freshUri();
    const setup = await mongoServiceSetup(uri);
    const service = await setup.start({ WRITE_TIMEOUT_MS: String(writeTimeoutMs), WRITER_MAX_QUEUE: "20", WRITER_MAX_BATCH: "10" });
    // The server is frozen half of the time, in 150 ms spells: it still answers, slowly.
    let frozen = false;
    const slow = setInterval(() => {
      frozen = !frozen;
      if (frozen) mongo.pause();
      else mongo.resume();
    }, 150);
    const waves: LoadResult[][] = [];
    const rss: number[] = [];
    try {
      for (let wave = 0; wave < 3; wave++) {
        waves.push(await runLoad({ url: () => service.url, key: setup.key, concurrency: 100, timeoutMs: 15_000, keepGoing: (r) => r.length < 200 }));
        rss.push(await rssBytes(service.child.pid!));
      }
    } finally {
      clearInterval(slow);
      mongo.resume();
    }
    try {
      const all = waves.flat();
      const overflow = all.filter((r) => r.status === 503);
      expect(overflow.length, "some requests overflowed the queue").toBeGreaterThan(0);
      // Refused at once when the queue is full: well before the write timeout.
      expect(Math.min(...overflow.map((r) => r.ms))).toBeLessThan(writeTimeoutMs / 2);
      for (const r of all) {
        expect([202, 503], `request ${r.n}`).toContain(r.status);
        expect(r.ms).toBeLessThan(answerWithinMs);
      }
      // Memory: a queue of 20 cannot grow; allow for the heap settling after the first wave.
      expect(rss[2]! - rss[0]!, `RSS per wave: ${rss.map((b) => Math.round(b / 2 ** 20)).join(", ")} MiB`).toBeLessThan(64 * 2 ** 20);

      const counts = await storedCounts(uri);
      // Each wave numbers its traces from 0, so a number may be stored once per wave that had it accepted.
      for (const r of all.filter((x) => x.status === 202)) expect(counts.get(r.n), `trace ${r.n} got a 202`).toBeGreaterThanOrEqual(1);

      // With the server at full speed again, requests succeed.
      const after = await runLoad({ url: () => service.url, key: setup.key, concurrency: 4, timeoutMs: 5000, keepGoing: (r) => r.length < 20 });
      expect(after.every((r) => r.status === 202)).toBe(true);
    } finally {
      service.child.kill("SIGTERM");
      await service.exited;
    }
  }, 90_000);
});
