import { create } from "@bufbuild/protobuf";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { openMongoStore } from "../../src/store/mongo/mongo-store.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { runCli, runCliRaw } from "../support/cli.js";
import { startMongoTestServer, type MongoTestServer } from "../support/ferretdb.js";
import { exportOf, genAiSpan, otlpJsonText } from "../otlp/otlp-support.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";
import { tempDir } from "../support/temp-dir.js";

/** `calltrace traces import`: export from one instance, import into a fresh one, and every figure the dashboard reads is the same. */
const day = 86_400_000;
let source: TestService;
let sourceProject: string;
let work: string;
const opened: Store[] = [];

let mongo: MongoTestServer;
afterAll(async () => {
  for (const store of opened) await store.close();
  await mongo?.close();
});

/** Where an import goes: the environment the CLI runs with, and the store it fills, opened by the test. */
interface Target {
  env: NodeJS.ProcessEnv;
  open(): Promise<Store>;
}

/** Every case runs on both stores (MongoDB's group-bys of the figures take seconds on FerretDB). */
const targets: [string, () => Target][] = [
  [
    "the embedded store",
    () => {
      const dir = tempDir();
      return { env: { DATA_DIR: dir }, open: async () => remember(openSqliteStore(dir)) };
    },
  ],
  [
    "MongoDB",
    () => {
      const uri = mongo.freshUri();
      return { env: { DATA_DIR: tempDir(), MONGODB_URI: uri }, open: async () => remember(await openMongoStore(uri)) };
    },
  ],
];

function remember(store: Store): Store {
  opened.push(store);
  return store;
}

const models = ["gpt-4o-2024-08-06", "gpt-4o-mini", "claude-sonnet-4-5", "gemini-2.5-flash"];
const providers: Record<string, string> = { "gpt-4o-2024-08-06": "openai", "gpt-4o-mini": "openai", "claude-sonnet-4-5": "anthropic", "gemini-2.5-flash": "gemini" };

beforeAll(async () => {
  mongo = await startMongoTestServer();
  source = await startTestService({ plans: { pro: { per_minute: 100_000, per_month: 1_000_000 } } });
  const { key, accountId } = await source.createKey("pro");
  sourceProject = accountId;
  work = tempDir();
  // 240 calls over 20 days, backdated with called_at (as an SDK's retries would deliver them), and some today without one.
  const sends: Promise<Response>[] = [];
  for (let i = 0; i < 240; i++) {
    const model = models[i % models.length]!;
    const body = traceBody(key, {
      provider: providers[model],
      model,
      tokens_in: 100 + i,
      tokens_out: 10 + (i % 37),
      latency_ms: 50 + ((i * 97) % 3000),
      cost_usd: Number((0.0001 * (1 + (i % 13))).toFixed(6)),
      status: i % 11 === 0 ? "error" : "success",
      ...(i % 11 === 0 ? { error: `=upstream ${i}, "quoted"` } : {}),
      user_id: `user-${i % 7}`,
      ...(i % 3 === 0 ? { session_id: `s-${i % 5}` } : {}),
      tags: i % 4 === 0 ? ["checkout", "beta"] : ["search"],
      metadata: { feature: `f${i % 3}`, "team.name": i % 2 === 0 ? "payments" : "+growth" },
      environment: i % 5 === 0 ? "staging" : "production",
      ...(i % 6 === 0 ? {} : { called_at: new Date(Date.now() - (i % 20) * day - i * 60_000).toISOString() }),
    });
    sends.push(postTrace(source.url, body, { key }));
  }
  for (const response of await Promise.all(sends)) expect(response.status).toBe(202);
});

/** Every figure the dashboard reads for a project, over the last 30 days. */
async function figures(store: Store, projectId: string) {
  const filter = create(TraceFilterSchema, { since: { seconds: BigInt(Math.floor((Date.now() - 30 * day) / 1000)) } });
  const groups = async (kind: "user" | "session" | "tag" | "environment" | "model" | "key") => store.usageByGroup(projectId, filter, { kind }, 100);
  return JSON.parse(
    JSON.stringify(
      {
        totals: await store.usageTotals(projectId, filter),
        byModel: await store.usageByModel(projectId, filter),
        byDay: await store.usageByDay(projectId, filter),
        byDayTotals: await store.usageByDayTotals(projectId, filter),
        byCountry: await store.usageByCountry(projectId, filter),
        latency: await store.latencyHistogram(projectId, filter),
        users: await groups("user"),
        sessions: await groups("session"),
        tags: await groups("tag"),
        environments: await groups("environment"),
        models: await groups("model"),
        keys: await groups("key"),
        feature: await store.usageByGroup(projectId, filter, { kind: "metadata", key: "feature" }, 100),
        usersByDay: await store.usageByGroupAndDay(projectId, filter, { kind: "user" }, ["user-0", "user-1", "user-6"]),
      },
      // Sums of doubles added in another order may differ in the last bits; the dashboard shows far fewer.
      (_key, value: unknown) =>
        typeof value === "bigint" ? String(value) : typeof value === "number" && !Number.isInteger(value) ? Number(value.toPrecision(12)) : value,
    ),
  ) as Record<string, unknown>;
}

function importInto(target: Target, files: string[], ...flags: string[]) {
  return runCliRaw(["traces", "import", ...files, "--json", ...flags], target.env);
}

describe.each(targets)("traces import into %s", (_name, newTarget) => {
  it("imports a JSONL export into a fresh instance with every dashboard figure identical, and stores nothing twice on a second import", { timeout: 240_000 }, async () => {
    const file = join(work, "export.jsonl");
    writeFileSync(file, runCli(["traces", "export"], { DATA_DIR: source.config.dataDir }));
    const target = newTarget();
    const first = importInto(target, [file], "--plan", "pro");
    expect(first.stderr).toContain(`importing ${file}`);
    expect(first.status).toBe(0);
    const report = JSON.parse(first.stdout) as { project: string; read: number; stored: number; duplicates: number; rejected: number };
    expect(report).toMatchObject({ read: 240, stored: 240, duplicates: 0, rejected: 0 });
    const store = await target.open();
    const expected = await figures(source.store, sourceProject);
    expect((expected.totals as { calls: string }).calls).toBe("240");
    expect(await figures(store, report.project)).toEqual(expected);

    const again = JSON.parse(importInto(target, [file], "--project", report.project).stdout) as typeof report;
    expect(again).toMatchObject({ project: report.project, read: 240, stored: 0, duplicates: 240, rejected: 0 });
    expect(await figures(store, report.project)).toEqual(expected);
  });

  it("stores the same traces with the fast path for exported rows off (IMPORT_FAST_PATH=false)", { timeout: 240_000 }, async () => {
    const file = join(work, "slow.jsonl");
    writeFileSync(file, runCli(["traces", "export"], { DATA_DIR: source.config.dataDir }));
    const target = newTarget();
    const imported = runCliRaw(["traces", "import", file, "--json", "--plan", "pro"], { ...target.env, IMPORT_FAST_PATH: "false" });
    const report = JSON.parse(imported.stdout) as { project: string; stored: number };
    expect(report).toMatchObject({ stored: 240 });
    const store = await target.open();
    expect(await figures(store, report.project)).toEqual(await figures(source.store, sourceProject));
  });

  it("imports the CSV export alike; the same traces as the JSONL export are duplicates of it", { timeout: 240_000 }, async () => {
    const jsonl = join(work, "both.jsonl");
    const csv = join(work, "both.csv");
    writeFileSync(jsonl, runCli(["traces", "export"], { DATA_DIR: source.config.dataDir }));
    writeFileSync(csv, runCli(["traces", "export", "--format", "csv"], { DATA_DIR: source.config.dataDir }));
    const target = newTarget();
    const fromCsv = JSON.parse(importInto(target, [csv], "--plan", "pro").stdout) as { project: string; stored: number };
    expect(fromCsv).toMatchObject({ stored: 240 });
    const store = await target.open();
    expect(await figures(store, fromCsv.project)).toEqual(await figures(source.store, sourceProject));
    // Spreadsheet guards and quoting come off: the error text is the one sent.
    const page = await store.listTraces(fromCsv.project, create(TraceFilterSchema, { status: "error" }), { pageSize: 1 });
    expect(page.traces[0]!.error).toMatch(/^=upstream \d+, "quoted"$/);
    const fromJsonl = JSON.parse(importInto(target, [jsonl], "--project", fromCsv.project).stdout) as { stored: number; duplicates: number };
    expect(fromJsonl).toMatchObject({ stored: 0, duplicates: 240 });
  });

  it("rejects bad lines with their line numbers and the API's own messages, and stores the rest", async () => {
    // The very text a POST of those fields answers in `details`.
    const { key } = await source.createKey("pro");
    const body = traceBody(key, { tokens_in: -1, provider: "cohere" });
    // A pooled connection the server closed while idle (its keep-alive timeout) resets once.
    const post = await postTrace(source.url, body, { key }).catch(() => postTrace(source.url, body, { key }));
    const details = ((await post.json()) as { details: string }).details;
    const lines = runCli(["traces", "export"], { DATA_DIR: source.config.dataDir }).trim().split("\n").slice(0, 5);
    const row = (i: number) => JSON.parse(lines[i]!) as Record<string, unknown>;
    const bad = [
      JSON.stringify(row(0)),
      "{not json",
      JSON.stringify({ ...row(1), tokens_in: -1, provider: "cohere" }),
      "",
      JSON.stringify({ ...row(2), received_at: new Date(Date.now() + 3_600_000).toISOString(), called_at: undefined }),
      JSON.stringify(row(3)),
    ].join("\n");
    const file = join(work, "bad.jsonl");
    writeFileSync(file, bad);
    const target = newTarget();
    const result = runCliRaw(["traces", "import", file, "--plan", "pro"], target.env);
    expect(result.status).toBe(1);
    expect(result.stdout).toMatch(/: 5 read, 2 stored, 0 duplicates, 3 rejected \(/);
    expect(result.stdout).toContain(`rejected ${file} line 2: not JSON:`);
    expect(result.stdout).toContain(`rejected ${file} line 3: ${details}`);
    expect(result.stdout).toMatch(/line 5: received_at: must not be more than 5 minutes ahead of the server's clock/);
  });

  it("imports an OTLP JSON file, each call at its span's start, once however often it is imported", async () => {
    const start = Date.now() - 4 * day;
    const request = exportOf([genAiSpan({ startMs: start }), genAiSpan({ startMs: start + 60_000 }), genAiSpan({ startMs: Date.now() - 400 * day })]);
    const file = join(work, "spans.json");
    writeFileSync(file, otlpJsonText(request));
    const target = newTarget();
    const first = importInto(target, [file], "--plan", "pro");
    const report = JSON.parse(first.stdout) as { project: string; stored: number; rejected: number; rejections: { where: string; reason: string }[] };
    expect(report).toMatchObject({ stored: 2, rejected: 1 });
    expect(report.rejections[0]!.reason).toMatch(/^called_at: must not be before .* \(the project keeps traces for 90 days\)$/);
    expect(report.rejections[0]!.where).toMatch(/^span [0-9a-f]{16}$/);
    const again = JSON.parse(importInto(target, [file], "--project", report.project).stdout) as { stored: number; duplicates: number };
    expect(again).toMatchObject({ stored: 0, duplicates: 2 });
    const store = await target.open();
    const placed = await store.usageTotals(
      report.project,
      create(TraceFilterSchema, { since: { seconds: BigInt(Math.floor((start - 1000) / 1000)) }, until: { seconds: BigInt(Math.floor((start + day) / 1000)) } }),
    );
    expect(placed.calls).toBe(2n);
  });

});

describe("traces import's arguments", () => {
  it("says what is wrong with its arguments", () => {
    const none = runCliRaw(["traces", "import", "--plan", "pro"], { DATA_DIR: tempDir() });
    expect(none.status).toBe(2);
    expect(none.stderr).toContain("traces import needs one or more files");
    const unknown = runCliRaw(["traces", "import", join(work, "x.txt"), "--plan", "pro"], { DATA_DIR: tempDir() });
    expect(unknown.stderr).toContain("cannot tell the format of");
    const noProject = runCliRaw(["traces", "import", join(work, "x.jsonl")], { DATA_DIR: tempDir() });
    expect(noProject.stderr).toContain("traces import needs --plan");
  });
});

describe.each(targets)("traces import --from langfuse | helicone into %s", (_name, newTarget) => {
  /** A hand-written sample of the tool's documented export, its days set to recent ones (the bounds of D58). */
  function sample(name: string): string {
    const days = (n: number) => new Date(Date.now() - n * day).toISOString().slice(0, 10);
    const file = join(work, name);
    writeFileSync(file, readFileSync(join(import.meta.dirname, "fixtures", name), "utf8").replaceAll("__DAY1__", days(3)).replaceAll("__DAY2__", days(2)));
    return file;
  }

  it("imports Langfuse generations (API page or blob export timestamps), skips other observations, once however often", async () => {
    const file = sample("langfuse-observations.json");
    const target = newTarget();
    const first = importInto(target, [file], "--from", "langfuse", "--plan", "pro");
    const report = JSON.parse(first.stdout) as { project: string; read: number; stored: number; rejected: number; rejections: Rejected[] };
    expect(report).toMatchObject({ read: 3, stored: 2, rejected: 1 });
    expect(report.rejections[0]).toMatchObject({ where: "row 4", reason: "provider: is required" });
    const again = JSON.parse(importInto(target, [file], "--from", "langfuse", "--project", report.project).stdout) as { stored: number; duplicates: number };
    expect(again).toMatchObject({ stored: 0, duplicates: 2 });
    const store = await target.open();
    const traces = (await store.listTraces(report.project, create(TraceFilterSchema), { pageSize: 10 })).traces;
    const byModel = Object.fromEntries(traces.map((t) => [t.model, t]));
    expect(byModel["gpt-4o-2024-08-06"]).toMatchObject({ provider: "openai", tokensIn: 1200, tokensOut: 350, costUsd: 0.0065, latencyMs: 1842, status: "success", environment: "production", metadata: { feature: "support" } });
    expect(byModel["claude-sonnet-4-5"]).toMatchObject({ provider: "anthropic", status: "error", error: "overloaded_error: Overloaded", userId: "cust-042", sessionId: "conv-19", tags: ["triage"], latencyMs: 750 });
    expect(new Date(Number(byModel["claude-sonnet-4-5"]!.calledAt!.seconds) * 1000).toISOString().slice(11, 19)).toBe("14:02:11");
  });

  it("imports Helicone requests: providers, cache reads and writes within tokens_in, sessions from properties, HTTP errors", async () => {
    const file = sample("helicone-export.jsonl");
    const target = newTarget();
    const report = JSON.parse(importInto(target, [file], "--from", "helicone", "--plan", "pro").stdout) as { project: string; stored: number; rejected: number };
    expect(report).toMatchObject({ stored: 3, rejected: 0 });
    const store = await target.open();
    const traces = (await store.listTraces(report.project, create(TraceFilterSchema), { pageSize: 10 })).traces;
    const byModel = Object.fromEntries(traces.map((t) => [t.model, t]));
    expect(byModel["gpt-4o-mini-2024-07-18"]).toMatchObject({ provider: "openai", tokensIn: 800, tokensOut: 120, ttftMs: 310, latencyMs: 1250, userId: "user-7", sessionId: "sess-3", metadata: { feature: "search" } });
    expect(byModel["claude-sonnet-4-5-20250929"]).toMatchObject({ provider: "anthropic", tokensIn: 1250, tokensCachedIn: 1000, tokensCacheWrite: 200 });
    expect(byModel["gpt-4o"]).toMatchObject({ status: "error", error: "HTTP 429" });
    const again = JSON.parse(importInto(target, [file], "--from", "helicone", "--project", report.project).stdout) as { duplicates: number };
    expect(again.duplicates).toBe(3);
  });
});

interface Rejected {
  where: string;
  reason: string;
}
