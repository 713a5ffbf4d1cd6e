import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoredTraceSchema } from "../../gen/calltrace/v1/trace_pb.js";
import { prepareMongoCollections } from "../../src/store/mongo/mongo-collections.js";
import { longestLatencyFind } from "../../src/store/mongo/mongo-error-runs.js";
import { openMongoStore } from "../../src/store/mongo/mongo-store.js";
import { startMongoTestServer, type MongoTestServer } from "../support/ferretdb.js";
import { call } from "../support/stored-call.js";

/** Every stage of an explain's plan (a MongoDB plan nests them under inputStage/inputStages). */
function stages(plan: unknown): Record<string, unknown>[] {
  if (plan === null || typeof plan !== "object") return [];
  const node = plan as Record<string, unknown>;
  return [node, ...Object.values(node).flatMap((value) => (Array.isArray(value) ? value.flatMap(stages) : stages(value)))];
}

/**
 * The Runs view's longest latency of a project (mongo-error-runs.ts) reads down the (project,
 * latency) index, not every call of the project sorted: on MongoDB an index scan with no sort
 * stage; FerretDB 1.24 pushes neither filter nor sort down to its SQLite tables, whatever the index.
 */
describe("MongoDB: the runs reads' indexes", () => {
  let server: MongoTestServer;
  beforeAll(async () => {
    server = await startMongoTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  for (const timeSeries of [true, false]) {
    it(`finds a project's longest latency, of any call or of timed calls, down account_latency (timeSeries: ${timeSeries})`, async () => {
      const uri = server.freshUri();
      const store = await openMongoStore(uri, { timeSeries });
      const client = new MongoClient(uri);
      try {
        const now = Date.now();
        const traces = Array.from({ length: 300 }, (_, i) => call({ accountId: i % 3 ? "acc_lat" : "acc_lat_other", at: now - i * 1000, latencyMs: 10 + i }));
        // The longest timed call, and an old one longer still, outside the range asked.
        traces.push(create(StoredTraceSchema, { ...call({ accountId: "acc_lat", at: now - 5000, latencyMs: 250 }), calledAt: timestampFromMs(now - 5000) }));
        traces.push(call({ accountId: "acc_lat", at: now - 3 * 86_400_000, latencyMs: 90_000 }));
        await store.writeBatch(traces.map((trace) => ({ trace, idempotencyKey: undefined })));
        await client.connect();
        const c = await prepareMongoCollections(client.db(), { expireAfterSeconds: 0, timeSeries, idempotencyWindowSeconds: 86_400 });
        const index = (await c.traces.indexes()).find((i) => i.name === "account_latency");
        expect(index?.key).toEqual({ "meta.accountId": 1, latencyMs: -1 });
        const since = now - 86_400_000;
        // acc_lat's longest in the range: i = 299.
        expect((await longestLatencyFind(c, "acc_lat", since, false).next())?.latencyMs).toBe(309);
        expect((await longestLatencyFind(c, "acc_lat", since, true).next())?.latencyMs).toBe(250);
        expect((await longestLatencyFind(c, "acc_lat", 0, false).next())?.latencyMs).toBe(90_000);

        const explained = (await longestLatencyFind(c, "acc_lat", since, false).explain()) as Record<string, unknown>;
        const serverInfo = explained.serverInfo as Record<string, unknown> | undefined;
        if (serverInfo?.ferretdbVersion !== undefined) {
          expect(explained).toMatchObject({ filterPushdown: false, sortPushdown: false });
        } else if (!c.capabilities.timeSeries) {
          // An ordinary collection is read in latency order down the index, up to the first call in the range.
          const winning = stages((explained.queryPlanner as Record<string, unknown>).winningPlan);
          expect(winning.some((s) => s.indexName === "account_latency"), JSON.stringify(winning)).toBe(true);
          expect(winning.some((s) => s.stage === "SORT"), JSON.stringify(winning)).toBe(false);
        }
      } finally {
        await client.close();
        await store.close();
      }
    });
  }
});
