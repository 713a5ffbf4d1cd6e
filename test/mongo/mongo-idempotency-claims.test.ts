import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { MongoClient, ObjectId } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoredTraceSchema } from "../../gen/calltrace/v1/trace_pb.js";
import { openMongoStore } from "../../src/store/mongo/mongo-store.js";
import { startMongoTestServer, type MongoTestServer } from "../support/ferretdb.js";

/** Runs against FerretDB, or unchanged against MONGODB_URI's server. */
let mongo: MongoTestServer;
beforeAll(async () => {
  mongo = await startMongoTestServer();
});
afterAll(async () => {
  await mongo?.close();
});

const key = { id: "key_claims", accountId: "acc_claims" };
const monthStart = () => new Date(new Date().toISOString().slice(0, 7));
const write = (idempotencyKey: string, quotaRemaining: number) => ({
  trace: create(StoredTraceSchema, {
    receivedAt: timestampFromMs(Date.now()),
    keyId: key.id,
    accountId: key.accountId,
    country: "XX",
    provider: "openai",
    model: "gpt-4o-2024-08-06",
    tokensIn: quotaRemaining,
    tokensOut: 1,
    latencyMs: 5,
    costUsd: 0.001,
    status: "success",
  }),
  idempotencyKey,
  quotaRemaining,
});

describe("MongoDB store, ordinary traces collection: Idempotency-Key claims checked by the unique index (D39)", () => {
  it("a claim left without its trace (a crash between claim and insert) is stored under the claim's trace id at once, and answers its replays with that write's figure", async () => {
    const uri = mongo.freshUri();
    const store = await openMongoStore(uri, { timeSeries: false });
    const client = await MongoClient.connect(uri);
    try {
      // What a process killed between the claim's insert and the trace's leaves behind.
      const traceId = new ObjectId();
      await client.db().collection<{ _id: string; traceId: ObjectId; createdAt: Date; quotaRemaining: number }>("idempotency").insertOne({ _id: `${key.id}:left`, traceId, createdAt: new Date(), quotaRemaining: 9 });

      expect(await store.writeBatch([write("left", 5)])).toEqual([{ kind: "stored" }]);
      const traces = await client.db().collection("traces").find({ "meta.keyId": key.id }).toArray();
      expect(traces.map((t) => String(t._id))).toEqual([String(traceId)]);

      // Replays, in separate batches and together: the figure of the 202 that stored it (D23).
      expect(await store.writeBatch([write("left", 3)])).toEqual([{ kind: "duplicate", quotaRemaining: 5 }]);
      expect(await store.writeBatch([write("left", 2), write("left", 1), write("fresh", 4)])).toEqual([
        { kind: "duplicate", quotaRemaining: 5 },
        { kind: "duplicate", quotaRemaining: 5 },
        { kind: "stored" },
      ]);
      expect(await client.db().collection("traces").countDocuments({ "meta.keyId": key.id })).toBe(2);
      // The month's count has each stored trace once: the duplicates' counts were taken back.
      expect(await store.monthlyTraceCount!(key, monthStart())).toBe(2);
    } finally {
      await client.close();
      await store.close();
    }
  });

  it("a key's month count keeps every trace of concurrent batches from two instances (FerretDB loses concurrent $inc of one document)", async () => {
    const uri = mongo.freshUri();
    const instances = await Promise.all([openMongoStore(uri, { timeSeries: false }), openMongoStore(uri, { timeSeries: false })]);
    try {
      const batches = await Promise.all(
        instances.flatMap((store, s) =>
          Array.from({ length: 8 }, (_, b) => store.writeBatch(Array.from({ length: 50 }, (_, i) => write(`c-${s}-${b}-${i}`, i)))),
        ),
      );
      expect(batches.flat().filter((o) => o.kind === "stored")).toHaveLength(800);
      for (const store of instances) expect(await store.monthlyTraceCount!(key, monthStart())).toBe(800);
    } finally {
      await Promise.all(instances.map((store) => store.close()));
    }
  });
});
