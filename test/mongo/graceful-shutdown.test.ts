import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMongoTestServer, type MongoTestServer } from "../support/ferretdb.js";
import { mongoServiceSetup, storedCounts } from "../support/mongo-service.js";
import { runLoad } from "../support/trace-load.js";

let mongo: MongoTestServer;
beforeAll(async () => {
  mongo = await startMongoTestServer();
});
afterAll(async () => {
  await mongo?.close();
});

const graceMs = 4000;

describe("graceful shutdown", () => {
  it("on SIGTERM mid-load stops accepting, commits what it took, exits within SHUTDOWN_GRACE_MS, and loses nothing that got a 202", async () => {
    const uri = mongo.freshUri();
    const setup = await mongoServiceSetup(uri);
    const service = await setup.start({ SHUTDOWN_GRACE_MS: String(graceMs), WRITE_TIMEOUT_MS: "2000" });
    let exited = false;
    void service.exited.then(() => (exited = true));

    let accepted = 0;
    let signalledAt = 0;
    const results = await runLoad({
      url: () => service.url,
      key: setup.key,
      concurrency: 24,
      timeoutMs: 10_000,
      maxRequests: 20_000,
      onResult: (r) => {
        if (r.status === 202) accepted++;
        if (accepted >= 200 && signalledAt === 0) {
          signalledAt = Date.now();
          service.child.kill("SIGTERM");
        }
      },
      keepGoing: () => !exited,
    });
    const code = await service.exited;
    const tookMs = Date.now() - signalledAt;

    expect(code).toBe(0);
    expect(tookMs).toBeLessThan(graceMs + 1500);
    expect(service.lines.some((line) => line.includes('"msg":"writer drained"'))).toBe(true);

    const counts = await storedCounts(uri);
    const acked = results.filter((r) => r.status === 202);
    expect(acked.length).toBeGreaterThanOrEqual(200);
    for (const r of acked) expect(counts.get(r.n), `trace ${r.n} got a 202`).toBe(1);
    // After the signal nothing is refused as unauthorized or failed oddly: a 202, a 503, or a closed connection.
    for (const r of results) expect([0, 202, 503], `request ${r.n}`).toContain(r.status);
  });
});
