import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMongoTestServer, type MongoTestServer } from "../support/ferretdb.js";
import { mongoServiceSetup, storedCounts } from "../support/mongo-service.js";
import { send } from "../support/trace-load.js";

/** These tests freeze the server, so they run their own FerretDB. */
let mongo: MongoTestServer;
beforeAll(async () => {
  mongo = await startMongoTestServer({ managed: true });
});
afterAll(async () => {
  await mongo?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("MongoDB store: Idempotency-Key retries under faults (D14)", () => {
  it("clients that retry with the same Idempotency-Key through a 3 s freeze of the server mid-load store every trace exactly once", async () => {
    const uri = mongo.freshUri();
    const setup = await mongoServiceSetup(uri);
    const service = await setup.start({ WRITE_TIMEOUT_MS: "1000" });
    try {
      const total = 400;
      let next = 0;
      let accepted = 0;
      let froze: Promise<void> | undefined;
      const sender = async () => {
        while (next < total) {
          const n = next++;
          for (let tries = 0; ; tries++) {
            const { status } = await send({ url: () => service.url, key: setup.key, idempotent: true, timeoutMs: 10_000 }, n);
            if (status === 202) break;
            expect(tries, `trace ${n} was never accepted`).toBeLessThan(100);
            await sleep(100);
          }
          if (++accepted === 150) {
            mongo.pause();
            froze = sleep(3000).then(() => mongo.resume());
          }
        }
      };
      await Promise.all(Array.from({ length: 16 }, sender));
      await froze;
      const counts = await storedCounts(uri);
      const wrong = [...Array(total).keys()].filter((n) => counts.get(n) !== 1).map((n) => `${n}: ${counts.get(n) ?? 0}`);
      expect(wrong).toEqual([]);
    } finally {
      mongo.resume();
      service.child.kill("SIGTERM");
      await service.exited;
    }
  }, 120_000);
});
