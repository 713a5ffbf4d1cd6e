import { create } from "@bufbuild/protobuf";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import type { ExportTraceServiceRequest } from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import { mintApiKey } from "../../src/auth/api-key.js";
import type { IdempotencyDoc } from "../../src/store/mongo/mongo-collections.js";
import { openMongoStore } from "../../src/store/mongo/mongo-store.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { runCliRaw } from "../support/cli.js";
import { startMongoTestServer, type MongoTestServer } from "../support/ferretdb.js";
import { tempDir } from "../support/temp-dir.js";
import { startTestService, type TestService } from "../support/test-service.js";
import { exportOf, genAiSpan, hex, otlpJsonText, postExport, storedOtlp } from "../otlp/otlp-support.js";

/**
 * An OTLP call is one call within its project whether it arrived live over OTLP or from an OTLP
 * JSON file given to `traces import` (docs/import.md, D63): on both stores, each way round.
 */
let mongo: MongoTestServer;
const closing: (() => Promise<unknown>)[] = [];
beforeAll(async () => {
  mongo = await startMongoTestServer();
});
afterAll(async () => {
  for (const close of closing.reverse()) await close();
  await mongo?.close();
});

/** A service on a fresh store of one kind, the store opened as the CLI opens it, and a key of a pro project. */
interface Target {
  service: TestService;
  store: Store;
  env: NodeJS.ProcessEnv;
  projectId: string;
  key: string;
  keyId: string;
  /** MongoDB's database name in the URI, for reading its claims; undefined on the embedded store. */
  mongoUri?: string;
}

async function target(kind: "embedded" | "mongodb"): Promise<Target> {
  const dataDir = tempDir();
  const mongoUri = kind === "mongodb" ? mongo.freshUri() : undefined;
  const service = await startTestService(mongoUri ? { mongodbUri: mongoUri } : { dataDir });
  const store = mongoUri ? await openMongoStore(mongoUri) : openSqliteStore(dataDir);
  closing.push(() => store.close());
  const project = (await store.teams.createOrganization({ name: "otlp", project: { name: "otlp", plan: "pro" } })).project;
  const minted = mintApiKey();
  const record = await store.keys.createKey({ accountId: project.id, name: "otlp", hash: minted.hash, prefix: minted.prefix });
  const env = { DATA_DIR: dataDir, ...(mongoUri ? { MONGODB_URI: mongoUri } : {}) };
  return { service, store, env, projectId: project.id, key: minted.plaintext, keyId: record.id, ...(mongoUri ? { mongoUri } : {}) };
}

function importFile(t: Target, request: ExportTraceServiceRequest) {
  const file = join(tempDir(), "spans.json");
  writeFileSync(file, otlpJsonText(request));
  const run = runCliRaw(["traces", "import", file, "--json", "--project", t.projectId], t.env);
  expect(run.stderr).not.toMatch(/error/i);
  return JSON.parse(run.stdout) as { stored: number; duplicates: number; rejected: number };
}

/** The project's OTLP calls, by span id, and the calls its usage counts. */
async function storedCalls(t: Target) {
  const spans = (await storedOtlp(t.store, t.projectId)).map((s) => s.otlpSpanId).sort();
  const { calls } = await t.store.usageTotals(t.projectId, create(TraceFilterSchema));
  return { spans, calls: Number(calls) };
}

const spanIds = (request: ExportTraceServiceRequest) => request.resourceSpans[0]!.scopeSpans[0]!.spans.map((s) => hex(s.spanId)).sort();

describe.each(["embedded", "mongodb"] as const)("OTLP calls live and imported on the %s store", (kind) => {
  it("a call that arrived live is a duplicate in a file, and one imported first is stored once when it arrives live", { timeout: 120_000 }, async () => {
    const t = await target(kind);
    const live = exportOf([genAiSpan(), genAiSpan()]);
    // A retried Export is idempotent, as before.
    expect((await postExport(t.service.url, t.key, live)).status).toBe(200);
    expect((await postExport(t.service.url, t.key, live)).status).toBe(200);
    const later = genAiSpan();
    const file = exportOf([...live.resourceSpans[0]!.scopeSpans[0]!.spans, later]);
    expect(importFile(t, file)).toMatchObject({ stored: 1, duplicates: 2, rejected: 0 });
    expect(importFile(t, file)).toMatchObject({ stored: 0, duplicates: 3, rejected: 0 });
    expect((await postExport(t.service.url, t.key, exportOf([later]))).status).toBe(200);
    expect(await storedCalls(t)).toEqual({ spans: spanIds(file), calls: 3 });
  });
});

describe("OTLP calls on a MongoDB store written before the identity was the project's", () => {
  it("a call claimed under the key that sent it, or under its file, or whose claim expired, is still stored once", { timeout: 120_000 }, async () => {
    const t = await target("mongodb");
    const client = await MongoClient.connect(t.mongoUri!);
    closing.push(() => client.close());
    const claims = client.db().collection<IdempotencyDoc>("idempotency");
    /** Rewrites the claim of an OTLP call as an older release wrote it: `to` its id, or deleted (expired). */
    const rewrite = async (callKey: string, to: string | undefined) => {
      const id = `otlp:${t.projectId}:${callKey}`;
      const claim = await claims.findOne({ _id: id });
      expect(claim, id).not.toBeNull();
      await claims.deleteOne({ _id: id });
      if (to !== undefined) await claims.insertOne({ ...claim!, _id: to });
    };
    const callKey = (span: ReturnType<typeof genAiSpan>) => `otlp:${hex(span.traceId)}:${hex(span.spanId)}`;
    const [sentByKey, fromFile, expired] = [genAiSpan(), genAiSpan(), genAiSpan()];

    expect((await postExport(t.service.url, t.key, exportOf([sentByKey, expired]))).status).toBe(200);
    await rewrite(callKey(sentByKey), `${t.keyId}:${callKey(sentByKey)}`);
    await rewrite(callKey(expired), undefined);
    expect(importFile(t, exportOf([fromFile]))).toMatchObject({ stored: 1, duplicates: 0 });
    await rewrite(callKey(fromFile), `import:${t.projectId}:otlp:${callKey(fromFile)}`);

    const all = exportOf([sentByKey, fromFile, expired]);
    expect((await postExport(t.service.url, t.key, all)).status).toBe(200);
    expect(importFile(t, all)).toMatchObject({ stored: 0, duplicates: 3 });
    expect(await storedCalls(t)).toEqual({ spans: spanIds(all), calls: 3 });
  });
});
