// The baseline of bench/mongo-ingest.ts: back-to-back single-document insertOne calls, one at a
// time, under the MongoDB store's write concern (majority, journaled), into a traces collection
// set up exactly as the store sets it up. Prints one JSON line: inserts/s and p99 in ms.
//   node --import tsx bench/insert-one-baseline.ts <mongodb-uri> <seconds>
import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { MongoClient, ObjectId } from "mongodb";
import { StoredTraceSchema } from "../gen/calltrace/v1/trace_pb.js";
import { prepareMongoCollections } from "../src/store/mongo/mongo-collections.js";
import { traceToDoc } from "../src/store/mongo/mongo-trace-doc.js";

const [uri, secondsArg] = process.argv.slice(2);
if (!uri) throw new Error("usage: insert-one-baseline.ts <mongodb-uri> [seconds]");
const seconds = Number(secondsArg ?? 10);

const client = await new MongoClient(uri).connect();
const c = await prepareMongoCollections(client.db(), { expireAfterSeconds: 90 * 86_400, timeSeries: true, idempotencyWindowSeconds: 86_400 });
const trace = create(StoredTraceSchema, {
  keyId: "key_baseline",
  accountId: "acc_baseline",
  country: "DE",
  provider: "openai",
  model: "gpt-4o-2024-08-06",
  tokensIn: 1200,
  tokensOut: 350,
  latencyMs: 842,
  costUsd: 0.0065,
  status: "success",
});

const latencies: number[] = [];
const until = performance.now() + seconds * 1000;
while (performance.now() < until) {
  trace.receivedAt = timestampNow();
  const started = performance.now();
  await c.traces.insertOne(traceToDoc(trace, new ObjectId()));
  latencies.push(performance.now() - started);
}
await client.close();
latencies.sort((a, b) => a - b);
console.log(
  JSON.stringify({
    insertsPerSecond: latencies.length / seconds,
    p50Ms: latencies[Math.floor(latencies.length * 0.5)] ?? 0,
    p99Ms: latencies[Math.floor(latencies.length * 0.99)] ?? 0,
    inserts: latencies.length,
  }),
);
