// Dashboard reads at scale: 1,000,000 traces for one account and 100,000 for each of nine others,
// spread over the last 30 days, each with a user (10,000 distinct in the big account, a few much
// busier than the rest), a session, up to three of 50 tags, metadata (`feature`, `team`) and an
// environment. Times the traces table's first page, a deep page through the cursor, the overview's
// 30-day aggregates, spend grouped by user, tag and metadata key, and the first page sorted by
// cost, at the store port and through QueryService over HTTP (session cookie and CSRF header, as
// the web app calls it). Target on the embedded store: each under 300 ms at p95.
//
//   node --import tsx bench/dashboard-reads.ts                 embedded store (SQLite)
//   node --import tsx bench/dashboard-reads.ts --store mongo   MongoDB adapter on FerretDB (test/support/ferretdb.ts),
//                                                              or the server of MONGODB_URI
//   --scale 0.1   seed a tenth of the rows (5.27: 10 million; each scale has its own block in RESULTS.md)     --runs 21   timed runs per row     --data-dir DIR  keep the seeded store
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { TraceFilterSchema, type TraceFilter } from "../gen/calltrace/v1/query_pb.js";
import { StoredTraceSchema } from "../gen/calltrace/v1/trace_pb.js";
import { startService } from "../src/app.js";
import { mintApiKey } from "../src/auth/api-key.js";
import { resolveConfig } from "../src/config/config.js";
import { hashPassword } from "../src/dashboard/password-hash.js";
import { createLogger } from "../src/log/logger.js";
import { openMongoStore } from "../src/store/mongo/mongo-store.js";
import { openSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import type { Store } from "../src/store/store.js";
import type { TraceWrite } from "../src/store/trace-store.js";
import { startMongoTestServer, type MongoTestServer } from "../test/support/ferretdb.js";
import { seededRandom } from "./support/attributed-traffic.js";
import { bulkSeed, type SeedRate } from "./support/bulk-seed.js";
import { machineLine, table, writeResultsSection } from "./support/results.js";

const { values: args } = parseArgs({
  options: {
    store: { type: "string", default: "sqlite" },
    scale: { type: "string", default: "1" },
    runs: { type: "string", default: "21" },
    "data-dir": { type: "string" },
  },
});
const storeKind = args.store === "mongo" ? "mongo" : "sqlite";
const scale = Number(args.scale);
const runs = Number(args.runs);
const targetMs = 300;
const dayMs = 86_400_000;
const password = "benchmark password";

const models = [
  ["openai", "gpt-4o", 2.5, 10],
  ["openai", "gpt-4o-mini", 0.15, 0.6],
  ["openai", "o3", 2, 8],
  ["anthropic", "claude-sonnet-4", 3, 15],
  ["anthropic", "claude-haiku-3.5", 0.8, 4],
  ["gemini", "gemini-2.5-pro", 1.25, 10],
  ["gemini", "gemini-2.5-flash", 0.3, 2.5],
] as const;
const countries = ["US", "US", "US", "GB", "DE", "FR", "IN", "BR", "JP", "CA", "AU", "IE", "NL", "ES", "SG", ""];
const users = 10_000;
const tags = Array.from({ length: 50 }, (_, i) => `tag-${String(i).padStart(2, "0")}`);
const features = Array.from({ length: 20 }, (_, i) => `feature-${String(i).padStart(2, "0")}`);
const teams = ["payments", "growth", "search", "support", "platform"];
/** Failures as providers word them, with the request ids and figures that vary per call (the Errors view masks them). */
const failures = [
  (n: number) => `rate_limit_error: ${30_000 + (n % 5000)} tokens per min exceeded, request req_${n.toString(36)}XyZ`,
  (n: number) => `overloaded_error: Overloaded (request id ${n.toString(16).padStart(8, "0")}-aaaa-4bbb-8ccc-${n.toString(16).padStart(12, "0")})`,
  (n: number) => `invalid_request_error: max_tokens: ${n % 100_000} > 8192, which is the maximum allowed`,
  () => "upstream 502: bad gateway",
  (n: number) => `context_length_exceeded: this model's maximum context length is 128000 tokens, you requested ${128_000 + (n % 9000)}`,
];

interface Seeded {
  accountId: string;
  email: string;
  total: number;
  seeding: SeedRate;
}

/**
 * The big account (a dashboard user, so HTTP reads can sign in) with three keys, nine others with
 * one key each, and their traces. Closes the store (the embedded store's bulk path writes alone).
 */
async function seed(store: Store, dataDir: string): Promise<Seeded> {
  const bigCount = Math.round(1_000_000 * scale);
  const otherCount = Math.round(100_000 * scale);
  const email = "bench@example.com";
  const user = await store.users.createUser({ email, passwordHash: await hashPassword(password) });
  const { project: account } = await store.teams.createOrganization({ name: email, ownerUserId: user.id, project: { name: "Default", plan: "pro" } });
  const accounts: { id: string; keys: string[]; count: number }[] = [{ id: account.id, keys: [], count: bigCount }];
  for (let i = 0; i < 9; i++)
    accounts.push({ id: ((await store.teams.createOrganization({ name: `other-${i}`, project: { name: `other-${i}`, plan: "free" } })).project).id, keys: [], count: otherCount });
  for (const [i, a] of accounts.entries()) {
    for (let k = 0; k < (i === 0 ? 3 : 1); k++) {
      const minted = mintApiKey();
      a.keys.push((await store.keys.createKey({ accountId: a.id, name: `key-${k}`, hash: minted.hash, prefix: minted.prefix })).id);
    }
  }

  const total = accounts.reduce((sum, a) => sum + a.count, 0);
  const rand = seededRandom(42);
  const start = Date.now() - 30 * dayMs;
  const step = (30 * dayMs - 60_000) / total;
  // Accounts interleave in time as real traffic does: each row picks an account by its share.
  const cumulative = accounts.map((_, i) => accounts.slice(0, i + 1).reduce((sum, a) => sum + a.count, 0) / total);
  /** The `i`th trace, oldest first. */
  const traceAt = (i: number): TraceWrite => {
    const r = rand();
    const account = accounts[cumulative.findIndex((c) => r < c)] ?? accounts[0]!;
    const [provider, model, inPrice, outPrice] = models[Math.floor(rand() * models.length)]!;
    const tokensIn = Math.floor(50 + rand() * 4000);
    const tokensOut = Math.floor(rand() * 800);
    const failed = rand() < 0.03;
    // Squaring skews usage: the lowest-numbered users make most of the calls, as big customers do.
    const user = Math.floor(users * rand() ** 2);
    const traceTags = Array.from({ length: Math.floor(rand() * 4) }, () => tags[Math.floor(rand() * tags.length)]!);
    return {
      idempotencyKey: undefined,
      trace: create(StoredTraceSchema, {
        receivedAt: timestampFromMs(Math.floor(start + i * step)),
        keyId: account.keys[Math.floor(rand() * account.keys.length)]!,
        accountId: account.id,
        country: countries[Math.floor(rand() * countries.length)]!,
        provider,
        model,
        tokensIn,
        tokensOut: failed ? 0 : tokensOut,
        latencyMs: Math.floor(Math.exp(5 + rand() * 3.5)),
        costUsd: failed ? 0 : (tokensIn * inPrice + tokensOut * outPrice) / 1e6,
        status: failed ? "error" : "success",
        ...(failed ? { error: failures[i % failures.length]!(i) } : {}),
        userId: `user-${user}`,
        sessionId: `user-${user}-s${Math.floor(rand() * 20)}`,
        tags: traceTags,
        metadata: rand() < 0.9 ? { feature: features[Math.floor(rand() * features.length)]!, team: teams[Math.floor(rand() * teams.length)]! } : {},
        environment: rand() < 0.8 ? "production" : "staging",
      }),
    };
  };
  const progress = (line: string) => console.error(line);
  // The embedded store through its bulk path; MongoDB through its batch writer, as ingest writes.
  let seeding: SeedRate;
  if (storeKind === "sqlite") {
    await store.close();
    seeding = bulkSeed(dataDir, total, traceAt, progress);
  } else {
    seeding = await writeInBatches(store, total, traceAt, progress);
    await store.close();
  }
  console.error(`seeding took ${Math.round(seeding.seconds)} s, ${Math.round(seeding.tracesPerSecond)} traces/s`);
  return { accountId: account.id, email, total, seeding };
}

/** Seeds a store through its batch writer (writeBatch), 2,000 traces a batch. */
async function writeInBatches(store: Store, total: number, traceAt: (i: number) => TraceWrite, progress: (line: string) => void): Promise<SeedRate> {
  const started = performance.now();
  for (let i = 0; i < total; ) {
    const batch: TraceWrite[] = [];
    for (const end = Math.min(total, i + 2000); i < end; i++) batch.push(traceAt(i));
    await store.writeBatch(batch);
    if (i % 200_000 < 2000) progress(`seeded ${i.toLocaleString("en-US")} / ${total.toLocaleString("en-US")} (${Math.round((performance.now() - started) / 1000)} s)`);
  }
  const seconds = (performance.now() - started) / 1000;
  return { traces: total, seconds, tracesPerSecond: total / seconds };
}

/** Time one row may take: slow servers (FerretDB) get fewer runs, never fewer than 3. */
const rowBudgetMs = 60_000;
/** A read slower than this is timed once, cold: repeating it would take too long to be useful. */
const slowReadMs = 10_000;

async function median(fn: () => Promise<unknown>): Promise<{ median: number; p95: number; runs: number }> {
  const warm = performance.now();
  await fn();
  const cold = performance.now() - warm;
  if (cold > slowReadMs) return { median: cold, p95: cold, runs: 1 };
  if (cold < 1000) for (let i = 0; i < 2; i++) await fn();
  const times: number[] = [];
  const started = performance.now();
  while (times.length < runs && (times.length < 3 || performance.now() - started < rowBudgetMs)) {
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return {
    median: times[Math.floor(times.length / 2)]!,
    p95: times[Math.min(times.length - 1, Math.ceil(times.length * 0.95) - 1)]!,
    runs: times.length,
  };
}

/** A signed-in Connect-JSON caller of the dashboard's services reading one project, as the web app is. */
async function signIn(baseUrl: string, email: string, projectId: string) {
  const res = await fetch(`${baseUrl}/calltrace.v1.AuthService/LogIn`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password }),
  });
  if (res.status !== 200) throw new Error(`log-in failed: ${res.status} ${await res.text()}`);
  const cookies = res.headers.getSetCookie().map((c) => c.split(";")[0]!);
  const csrf = decodeURIComponent(cookies.find((c) => c.startsWith("ct_csrf="))!.slice("ct_csrf=".length));
  return async (method: string, body: unknown) => {
    const r = await fetch(`${baseUrl}/calltrace.v1.${method}`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie: cookies.join("; "), "x-csrf-token": csrf },
      body: JSON.stringify({ projectId, ...(body as object) }),
    });
    if (r.status !== 200) throw new Error(`${method}: ${r.status} ${await r.text()}`);
    return (await r.json()) as Record<string, unknown>;
  };
}

async function main(): Promise<void> {
  let mongo: MongoTestServer | undefined;
  let uri: string | undefined;
  const dataDir = args["data-dir"] ?? mkdtempSync(join(tmpdir(), "calltrace-bench-dashboard-"));
  if (storeKind === "mongo") {
    mongo = await startMongoTestServer();
    uri = mongo.freshUri();
  }
  const open = () => (uri ? openMongoStore(uri) : Promise.resolve(openSqliteStore(dataDir)));
  let store = await open();
  const reuse = join(dataDir, "seeded.json");
  let seeded: Seeded;
  if (!uri && existsSync(reuse)) {
    seeded = JSON.parse(readFileSync(reuse, "utf8")) as Seeded;
    console.error(`reusing the store seeded in ${dataDir}`);
    await store.close();
  } else {
    seeded = await seed(store, dataDir);
    if (args["data-dir"] && !uri) (await import("node:fs")).writeFileSync(reuse, JSON.stringify(seeded));
  }
  // Reopen, so no statement or page cache from seeding flatters the reads.
  store = await open();

  // The overview's "30d": today and the 29 UTC days before it (web/src/pages/overview.tsx), and,
  // for comparison, a rolling 30 x 24 hours, whose partial first day cannot come from roll-ups.
  const today = Math.floor(Date.now() / dayMs) * dayMs;
  const thirtyDays = create(TraceFilterSchema, { since: timestampFromDate(new Date(today - 29 * dayMs)) });
  const rolling = create(TraceFilterSchema, { since: timestampFromDate(new Date(Date.now() - 30 * dayMs)) });
  const none = create(TraceFilterSchema);
  const errorsOfOneModel = create(TraceFilterSchema, { provider: "anthropic", model: "claude-sonnet-4", status: "error" });
  // A cursor about halfway down the big account's 1,000,000 traces: the next page of a listing that
  // ends at the middle of the 30 days (cursors are positions in time, valid under any filter).
  const middle = create(TraceFilterSchema, { until: timestampFromDate(new Date(Date.now() - 15 * dayMs)) });
  const deepCursor = (await store.listTraces(seeded.accountId, middle, { pageSize: 50 })).nextCursor;
  const overview = (filter: TraceFilter) =>
    Promise.all([
      store.usageTotals(seeded.accountId, filter),
      store.usageByModel(seeded.accountId, filter),
      store.usageByDay(seeded.accountId, filter),
      store.latencyHistogram(seeded.accountId, filter),
    ]);

  const loadBefore = loadavg()[0]!;
  const rows: [string, { median: number; p95: number; runs: number }][] = [];
  const measure = async (name: string, fn: () => Promise<unknown>) => {
    const result = await median(fn);
    rows.push([name, result]);
    console.error(`${name}: median ${result.median.toFixed(1)} ms, p95 ${result.p95.toFixed(1)} ms, ${result.runs} runs`);
  };
  await measure("store: first page (50 rows, newest first)", () => store.listTraces(seeded.accountId, none, { pageSize: 50 }));
  await measure("store: deep page via cursor (halfway down the account's traces)", () =>
    store.listTraces(seeded.accountId, none, { pageSize: 50, cursor: deepCursor }),
  );
  await measure("store: first page, filtered (provider, model, status=error)", () =>
    store.listTraces(seeded.accountId, errorsOfOneModel, { pageSize: 50 }),
  );
  await measure("store: overview, 30 UTC days (totals + by model + by day + latency, concurrently)", () => overview(thirtyDays));
  await measure("store: overview, rolling 30 x 24 h (the same four reads)", () => overview(rolling));
  await measure("store: geography, 30 UTC days (by country)", () => store.usageByCountry(seeded.accountId, thirtyDays));
  await measure("store: spend by user, 30 UTC days (top 100 of 10,000 users, with p50/p95)", () =>
    store.usageByGroup(seeded.accountId, thirtyDays, { kind: "user" }, 100),
  );
  await measure("store: spend by tag, 30 UTC days (50 tags)", () => store.usageByGroup(seeded.accountId, thirtyDays, { kind: "tag" }, 100));
  await measure("store: spend by metadata key `feature`, 30 UTC days (20 values)", () =>
    store.usageByGroup(seeded.accountId, thirtyDays, { kind: "metadata", key: "feature" }, 100),
  );
  await measure("store: spend by user, rolling 30 x 24 h (top 100)", () => store.usageByGroup(seeded.accountId, rolling, { kind: "user" }, 100));
  const topUsers = (await store.usageByGroup(seeded.accountId, thirtyDays, { kind: "user" }, 10)).groups.map((g) => g.value);
  await measure("store: spend per day of the top 10 users, 30 UTC days", () =>
    store.usageByGroupAndDay(seeded.accountId, thirtyDays, { kind: "user" }, topUsers),
  );
  await measure("store: first page sorted by cost, 30 UTC days (50 rows, most expensive first)", () =>
    store.listTraces(seeded.accountId, thirtyDays, { pageSize: 50, sort: { order: "cost", ascending: false } }),
  );
  const topUser = create(TraceFilterSchema, { since: thirtyDays.since, userId: topUsers[0] });
  await measure("store: first page of the top user sorted by cost, 30 UTC days", () =>
    store.listTraces(seeded.accountId, topUser, { pageSize: 50, sort: { order: "cost", ascending: false } }),
  );
  await measure("store: tags of the top user, 30 UTC days (group-by under a user filter)", () =>
    store.usageByGroup(seeded.accountId, topUser, { kind: "tag" }, 100),
  );
  // The Errors and Runs views (D59): error groups from their roll-ups, and the failed calls of one
  // model through their (project, group, time) index; runs from their roll-up, each user's sessions.
  await measure("store: errors grouped, 30 UTC days (top 50 groups with models, keys, users)", () => store.errorGroups(seeded.accountId, thirtyDays, 50));
  const oneModel = create(TraceFilterSchema, { since: thirtyDays.since, provider: "anthropic", model: "claude-sonnet-4" });
  await measure("store: errors grouped under a model filter, 30 UTC days (from the failed calls)", () =>
    store.errorGroups(seeded.accountId, oneModel, 50),
  );
  await measure("store: runs, most recent first, 30 UTC days (50 runs)", () => store.listRuns(seeded.accountId, thirtyDays, "recent", 50));
  await measure("store: runs, highest cost first, 30 UTC days (50 runs)", () => store.listRuns(seeded.accountId, thirtyDays, "cost", 50));
  const dearest = (await store.listRuns(seeded.accountId, thirtyDays, "cost", 1))[0]!.id;
  await measure("store: one run with its calls (the dearest)", () => store.getRun(seeded.accountId, dearest));
  await store.close();

  const config = { ...resolveConfig({}, {}), port: 0, dataDir, logLevel: "silent", ...(uri ? { mongodbUri: uri } : {}) };
  const service = await startService(config, createLogger("silent"));
  try {
    const call = await signIn(service.url, seeded.email, seeded.accountId);
    const filter = { since: new Date(today - 29 * dayMs).toISOString() };
    await measure("HTTP QueryService.ListTraces: first page", () => call("QueryService/ListTraces", { pageSize: 50 }));
    await measure("HTTP QueryService.ListTraces: deep page via cursor", () =>
      call("QueryService/ListTraces", { pageSize: 50, cursor: deepCursor }),
    );
    await measure("HTTP overview, 30 UTC days (4 calls in parallel, as the page makes them)", () =>
      Promise.all(
        ["GetUsageTotals", "GetUsageByModel", "GetUsageByDay", "GetLatencyHistogram"].map((m) => call(`QueryService/${m}`, { filter })),
      ),
    );
    await measure("HTTP attribution page by user, 30 UTC days (top 100, then the top 10 per day)", async () => {
      const top = await call("QueryService/GetUsageByGroup", { filter, dimension: "DIMENSION_USER", limit: 100 });
      const values = (top.groups as { value?: string }[]).slice(0, 10).map((g) => g.value ?? "");
      await call("QueryService/GetUsageByGroupAndDay", { filter, dimension: "DIMENSION_USER", values });
    });
    await measure("HTTP QueryService.ListTraces: first page sorted by cost", () =>
      call("QueryService/ListTraces", { filter, pageSize: 50, order: "TRACE_ORDER_COST" }),
    );
    await measure("HTTP Errors page, 30 UTC days (GetErrorGroups, 50 groups)", () => call("QueryService/GetErrorGroups", { filter, limit: 50 }));
    await measure("HTTP Runs page, 30 UTC days (ListRuns, 100 runs)", () => call("QueryService/ListRuns", { filter, limit: 100 }));
    await measure("HTTP a run's page (GetRun)", () => call("QueryService/GetRun", { id: dearest }));
  } finally {
    await service.close(1000);
    await mongo?.close();
    if (!args["data-dir"]) rmSync(dataDir, { recursive: true, force: true });
  }

  const load = `Load average (1 min) ${loadBefore.toFixed(1)} before and ${loadavg()[0]!.toFixed(1)} after the reads: other work shares the cores, so medians move with it.`;
  const ferretNote = mongo?.managed
    ? "\n\nFerretDB 1.24's SQLite backend pushes no filter or sort on the `meta.*` fields down to SQLite (its explain says `filterPushdown: false`, `SCAN`), so every read scans and decodes the whole collection, and it answers one accumulator per `$group`, so each sum is a scan of its own. These figures measure that test server, not the adapter's indexes on a real MongoDB (run with `MONGODB_URI` set for that). At 10 times this size (190,000 traces) one first page took 37 s, so the full 1,900,000 were not timed here."
    : "";
  const storeName = uri
    ? mongo?.managed
      ? "MongoDB adapter on FerretDB 1.24 (SQLite backend)"
      : "MongoDB adapter (MONGODB_URI)"
    : "embedded store (SQLite)";
  const body = [
    `### Dashboard reads: ${storeName}`,
    "",
    `\`node --import tsx bench/dashboard-reads.ts${uri ? " --store mongo" : ""}${scale !== 1 ? ` --scale ${scale}` : ""}\`: ${seeded.total.toLocaleString("en-US")} traces over 30 days, ` +
      `${Math.round(1_000_000 * scale).toLocaleString("en-US")} of them in the account read, ${Math.round(100_000 * scale).toLocaleString("en-US")} in each of nine others; ` +
      `each trace has one of ${users.toLocaleString("en-US")} users (skewed: a few make most calls), a session, up to 3 of ${tags.length} tags, metadata \`feature\` (${features.length} values) and \`team\` on 90%, and an environment. ` +
      `${seedingLine(seeded.seeding, uri !== undefined)} Up to ${runs} timed runs per row (fewer when a row passes ${rowBudgetMs / 1000} s, at least 3; one cold run for a read over ${slowReadMs / 1000} s) after warm-up. ${machineLine()}, ${cpus().length} cores (shared). ${load}${ferretNote}`,
    "",
    table(
      ["read", "median ms", "p95 ms", "runs", `p95 under ${targetMs} ms`],
      rows.map(([name, r]) => [name, r.median.toFixed(1), r.p95.toFixed(1), r.runs, r.p95 < targetMs ? "yes" : "**no**"]),
    ),
  ].join("\n");
  console.log(body);
  writeDashboardSection(scale === 1 ? storeKind : `${storeKind}-x${scale}`, body);
}

/** How the store was seeded, how fast, and what 10 million traces would take at that rate (target: under 10 minutes on the embedded store). */
function seedingLine(seeding: SeedRate, mongo: boolean): string {
  const tenMillionMinutes = 10_000_000 / seeding.tracesPerSecond / 60;
  const path = mongo ? "through the store's batch writer (writeBatch, 2,000 traces a batch)" : "through the store's bulk path (bench/support/bulk-seed.ts: its batch commit, 20,000 traces a commit)";
  const target = mongo ? "" : `; 10 million at this rate would take ${tenMillionMinutes.toFixed(0)} minutes, target under 10: **${tenMillionMinutes < 10 ? "met" : "not met"}**`;
  return `Seeded ${path} in ${seeding.seconds.toFixed(0)} s, ${seeding.tracesPerSecond.toFixed(0)} traces/s${target}.`;
}

/** bench/RESULTS.md's dashboard section holds one block per store; a run replaces only its own. */
function writeDashboardSection(kind: string, body: string): void {
  const file = new URL("RESULTS.md", import.meta.url);
  const text = existsSync(file) ? readFileSync(file, "utf8") : "";
  const outer = /<!-- dashboard:begin -->\n([\s\S]*?)\n<!-- dashboard:end -->/.exec(text)?.[1] ?? "## Dashboard reads";
  const begin = `<!-- dashboard-${kind}:begin -->`;
  const end = `<!-- dashboard-${kind}:end -->`;
  const block = `${begin}\n${body}\n${end}`;
  const start = outer.indexOf(begin);
  const stop = outer.indexOf(end);
  const next =
    start >= 0 && stop > start ? outer.slice(0, start) + block + outer.slice(stop + end.length) : `${outer.trimEnd()}\n\n${block}`;
  writeResultsSection("dashboard", next);
}

await main();
