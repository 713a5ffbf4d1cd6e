import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintApiKey } from "../../src/auth/api-key.js";
import { openMongoStore } from "../../src/store/mongo/mongo-store.js";
import type { Store } from "../../src/store/store.js";
import { type MongoTestServer, startMongoTestServer } from "../support/ferretdb.js";
import { startTestService, type TestService } from "../support/test-service.js";
import { exportOf, genAiSpan, hex, newTraceId, postExport, postLongAgoRetryAndTwin, storedOtlp } from "./otlp-support.js";

/** OTLP ingest on the MongoDB store (FerretDB): retries, nested spans across Exports and twin spans are stored once there too. */
let mongo: MongoTestServer;
let service: TestService;
let store: Store;
let key: string;
let accountId: string;

beforeAll(async () => {
  mongo = await startMongoTestServer();
  const uri = mongo.freshUri();
  service = await startTestService({ mongodbUri: uri });
  store = await openMongoStore(uri);
  const account = (await store.teams.createOrganization({ name: "otlp", project: { name: "otlp", plan: "pro" } })).project;
  const minted = mintApiKey();
  await store.keys.createKey({ accountId: account.id, name: "otlp", hash: minted.hash, prefix: minted.prefix });
  key = minted.plaintext;
  accountId = account.id;
});
afterAll(async () => {
  await store?.close();
  await mongo?.close();
});

describe("OTLP on the MongoDB store", () => {
  it("stores each call once: a retried Export (also of a call that started long ago), nested spans in two Exports, and twins sharing a response id", async () => {
    const first = exportOf([genAiSpan(), genAiSpan()]);
    expect((await postExport(service.url, key, first)).status).toBe(200);
    expect((await postExport(service.url, key, first)).status).toBe(200);

    const traceId = newTraceId();
    const outer = genAiSpan({ traceId });
    const inner = genAiSpan({ traceId, parentSpanId: outer.spanId });
    expect((await postExport(service.url, key, exportOf([inner]))).status).toBe(200);
    expect((await postExport(service.url, key, exportOf([outer]))).status).toBe(200);

    const twin = (output: number) =>
      genAiSpan({
        attributes: {
          "gen_ai.operation.name": "chat",
          "gen_ai.provider.name": "anthropic",
          "gen_ai.response.model": "claude-haiku-4-5-20251001",
          "gen_ai.response.id": "msg_mongo_twin",
          "gen_ai.usage.input_tokens": 10,
          "gen_ai.usage.output_tokens": output,
        },
      });
    expect((await postExport(service.url, key, exportOf([twin(567)]))).status).toBe(200);
    expect((await postExport(service.url, key, exportOf([twin(568)]))).status).toBe(200);

    const longAgo = await postLongAgoRetryAndTwin(service.url, key);
    expect(longAgo.statuses).toEqual([200, 200, 200]);

    const stored = await storedOtlp(store, accountId);
    expect(stored).toHaveLength(5);
    expect(stored.filter((t) => t.otlpSpanId === hex(longAgo.twin.spanId))).toEqual([]);
    expect(stored.filter((t) => t.otlpTraceId === hex(traceId)).map((t) => t.otlpSpanId)).toEqual([hex(inner.spanId)]);
    expect(stored.filter((t) => t.provider === "anthropic").map((t) => t.tokensOut)).toEqual([567]);
  });
});
