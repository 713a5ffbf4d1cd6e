// Dashboard reads at scale (issues 26 and 27): a project holding N traces (1,000,000 unless told)
// and nine others holding a tenth as many together, over the last 60 days, seeded through
// `traces import`'s path (importTraces, src/import/trace-import.ts: batches into the store's
// batch writer) with the history bench/support/dashboard-traffic.ts makes: runs of an agent's
// calls sharing a session or an OTLP trace, a few users making most calls, failures whose texts
// carry ids and figures. Then each page's reads, as the page makes them (its QueryService calls,
// concurrently where it makes them so), through a signed-in Connect client over a socket, for the
// dashboard addresses a lead opens: the Overview against the previous period with its daily and
// hourly trends, Errors, Runs and a run's timeline, Attribution, Traces. Target on the embedded
// store: each page's p95 under 300 ms.
//
//   node --import tsx bench/dashboard-reads.ts                 1,000,000 traces, embedded store (SQLite)
//   BENCH_DASHBOARD_TRACES=10000000 node --import tsx bench/dashboard-reads.ts   the 10-million row set (or --traces 10000000)
//   --store mongo   the MongoDB adapter on FerretDB (test/support/ferretdb.ts), or the server of MONGODB_URI
//   --runs 21       timed runs per row      --data-dir DIR   seed into DIR and keep it; a later run with the same DIR reuses it
//   --only REGEX    time only the rows whose "page address" matches (and the baseline); prints them, writes nothing to RESULTS.md
//   --group-rank-in-sql false   group-bys read every group's sums into JavaScript (GROUP_RANK_IN_SQL, D80), to compare
//   --attribute-sets-read false tag and metadata group-bys read each call's JSON, not its set number (ATTRIBUTE_SETS_READ, D83, D86), to compare
// Each store and size has its own block in bench/RESULTS.md.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { Dimension, RunOrder, TraceOrder } from "../gen/calltrace/v1/query_pb.js";
import { QueryService } from "../gen/calltrace/v1/query_service_pb.js";
import { startService } from "../src/app.js";
import { mintApiKey } from "../src/auth/api-key.js";
import { resolveConfig } from "../src/config/config.js";
import { hashPassword } from "../src/dashboard/password-hash.js";
import type { ImportItem } from "../src/import/import-item.js";
import { withIndexesDeferred } from "../src/import/deferred-indexes.js";
import { importTraces } from "../src/import/trace-import.js";
import { commitTracesMax } from "../src/store/sqlite/sqlite-batch-commit.js";
import { createLogger } from "../src/log/logger.js";
import { openStore } from "../src/store/open-store.js";
import { startMongoTestServer, type MongoTestServer } from "../test/support/ferretdb.js";
import { attributesFromQuery, dimensions, withAttributes } from "../web/src/attributes.js";
import { bounds, filtersFromQuery, modelsFilter, previousBounds, traceFilter } from "../web/src/filters.js";
import { dashboardTraffic, type TrafficProject } from "./support/dashboard-traffic.js";
import { machineLine, table, writeResultsSection } from "./support/results.js";

const { values: args } = parseArgs({
  options: {
    store: { type: "string", default: "sqlite" },
    traces: { type: "string", default: process.env.BENCH_DASHBOARD_TRACES ?? "1000000" },
    runs: { type: "string", default: "21" },
    "data-dir": { type: "string" },
    only: { type: "string" },
    "group-rank-in-sql": { type: "string", default: "true" },
    "attribute-sets-read": { type: "string", default: "true" },
  },
});
const only = args.only === undefined ? undefined : new RegExp(args.only);
const storeKind = args.store === "mongo" ? "mongo" : "sqlite";
const traceCount = Number(args.traces);
const runs = Number(args.runs);
if (!Number.isInteger(traceCount) || traceCount < 1000)
  throw new Error(`--traces (BENCH_DASHBOARD_TRACES): a whole number of at least 1000, not ${args.traces}`);
const targetMs = 300;
const days = 60;
const hourMs = 3_600_000;
const password = "benchmark password";

interface Seeding {
  traces: number;
  seconds: number;
  tracesPerSecond: number;
  /** CPU time of every thread of this process (the import's reading and the store's writer) per trace. */
  cpuUsPerTrace: number;
  loadBefore: number;
  loadAfter: number;
}

interface Seeded {
  projectId: string;
  email: string;
  seeding: Seeding;
}

type ServiceConfig = ReturnType<typeof resolveConfig>;

/**
 * A dashboard user owning the project read (three keys), nine other projects (a key each), and
 * their history imported as `traces import` imports a file: importTraces into the store the
 * service opens.
 */
async function seed(config: ServiceConfig): Promise<Seeded> {
  const store = await openStore(config);
  const email = "bench@example.com";
  const user = await store.users.createUser({ email, passwordHash: await hashPassword(password) });
  const { project } = await store.teams.createOrganization({
    name: email,
    ownerUserId: user.id,
    project: { name: "Default", plan: "pro" },
  });
  const projects: TrafficProject[] = [{ id: project.id, keyIds: [] }];
  for (let i = 0; i < 9; i++)
    projects.push({
      id: (await store.teams.createOrganization({ name: `other-${i}`, project: { name: `other-${i}`, plan: "free" } })).project.id,
      keyIds: [],
    });
  for (const [i, p] of projects.entries()) {
    for (let k = 0; k < (i === 0 ? 3 : 1); k++) {
      const minted = mintApiKey();
      p.keyIds.push((await store.keys.createKey({ accountId: p.id, name: `key-${k}`, hash: minted.hash, prefix: minted.prefix })).id);
    }
  }

  const [read, ...others] = projects as [TrafficProject, ...TrafficProject[]];
  async function* items(): AsyncGenerator<ImportItem> {
    let n = 0;
    for (const write of dashboardTraffic(read, others, traceCount, days, Date.now() - 60_000)) yield { where: `call ${++n}`, write };
  }
  const loadBefore = loadavg()[0]!;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  let logged = 0;
  // As `traces import` decides (D77, D81): a fresh store's seeding builds the scattered indexes and sums the runs after the rows.
  const counts = await withIndexesDeferred(
    store,
    "auto",
    traceCount + Math.floor(traceCount / 10),
    (line) => console.error(`${line} (${Math.round((performance.now() - started) / 1000)} s)`),
    () =>
      importTraces(
        items(),
        store,
        (rejection) => {
          throw new Error(`${rejection.where}: ${rejection.reason}`);
        },
        (c) => {
          if (c.read - logged < 200_000) return;
          logged = c.read;
          console.error(`imported ${c.read.toLocaleString("en-US")} (${Math.round((performance.now() - started) / 1000)} s)`);
        },
      ),
  );
  await store.close();
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  if (counts.stored !== counts.read)
    throw new Error(`seeding stored ${counts.stored} of ${counts.read} traces (${counts.duplicates} duplicates): use an empty --data-dir`);
  const seeding = {
    traces: counts.stored,
    seconds,
    tracesPerSecond: counts.stored / seconds,
    cpuUsPerTrace: (cpu.user + cpu.system) / counts.stored,
    loadBefore,
    loadAfter: loadavg()[0]!,
  };
  console.error(
    `seeding took ${Math.round(seconds)} s, ${Math.round(seeding.tracesPerSecond)} traces/s, ${Math.round(seeding.cpuUsPerTrace)} µs CPU per trace`,
  );
  return { projectId: project.id, email, seeding };
}

/** Time one row may take: slow servers (FerretDB) get fewer runs, never fewer than 3. */
const rowBudgetMs = 60_000;
/** A read slower than this is timed once, cold: repeating it would take too long to be useful. */
const slowReadMs = 10_000;

interface Timing {
  median: number;
  p95: number;
  runs: number;
  /** CPU time of this process (the service and its client, every thread) per read. */
  cpuMs: number;
}

async function time(fn: () => Promise<unknown>): Promise<Timing> {
  const warm = performance.now();
  const warmCpu = process.cpuUsage();
  await fn();
  const cold = performance.now() - warm;
  if (cold > slowReadMs) {
    const cpu = process.cpuUsage(warmCpu);
    return { median: cold, p95: cold, runs: 1, cpuMs: (cpu.user + cpu.system) / 1000 };
  }
  if (cold < 1000) for (let i = 0; i < 2; i++) await fn();
  const times: number[] = [];
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  while (times.length < runs && (times.length < 3 || performance.now() - started < rowBudgetMs)) {
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
  }
  const cpu = process.cpuUsage(cpuBefore);
  times.sort((a, b) => a - b);
  return {
    median: times[Math.floor(times.length / 2)]!,
    p95: times[Math.min(times.length - 1, Math.ceil(times.length * 0.95) - 1)]!,
    runs: times.length,
    cpuMs: (cpu.user + cpu.system) / 1000 / times.length,
  };
}

type Query = Client<typeof QueryService>;

/** A QueryService client signed in as the dashboard user, reading one project, as the web app's (web/src/api.ts): Connect JSON, session cookie, CSRF header. */
async function signIn(baseUrl: string, email: string, projectId: string): Promise<Query> {
  const res = await fetch(`${baseUrl}/calltrace.v1.AuthService/LogIn`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password }),
  });
  if (res.status !== 200) throw new Error(`log-in failed: ${res.status} ${await res.text()}`);
  const cookies = res.headers.getSetCookie().map((c) => c.split(";")[0]!);
  const csrf = decodeURIComponent(cookies.find((c) => c.startsWith("ct_csrf="))!.slice("ct_csrf=".length));
  const session: Interceptor = (next) => (req) => {
    req.header.set("cookie", cookies.join("; "));
    req.header.set("x-csrf-token", csrf);
    if (!req.stream) (req.message as { projectId?: string }).projectId = projectId;
    return next(req);
  };
  return createClient(
    QueryService,
    createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false, interceptors: [session] }),
  );
}

/**
 * Each page's reads for its address (the part after the project's base URL), as the page makes
 * them (web/src/pages/*.tsx), with the filters the dashboard builds from an address
 * (web/src/filters.ts, web/src/attributes.ts); the time bounds are taken afresh on every read.
 */
const pages = {
  /** Headline figures against the previous period, per model and day, latency, by key and provider, and the trend: by hour up to 48 hours, else by day (overview.tsx). */
  overview: (q: Query, params: URLSearchParams) => () => {
    const filters = filtersFromQuery(params, "30d");
    const attributes = attributesFromQuery(params);
    const filter = withAttributes(traceFilter(filters), attributes);
    const previous = previousBounds(filters);
    const { since, until } = bounds(filters);
    const hourly = since !== undefined && (until?.getTime() ?? Date.now()) - since.getTime() <= 48 * hourMs;
    return Promise.all([
      q.getUsageTotals({ filter }),
      q.getUsageByModel({ filter }),
      q.getUsageByDay({ filter }),
      q.getLatencyHistogram({ filter }),
      q.getUsageByGroup({ filter, dimension: Dimension.KEY, limit: 10 }),
      q.getUsageByGroup({ filter, dimension: Dimension.PROVIDER, limit: 10 }),
      hourly ? q.getUsageByHourTotals({ filter }) : q.getUsageByDayTotals({ filter }),
      previous ? q.getUsageTotals({ filter: withAttributes(traceFilter(filters, previous), attributes) }) : undefined,
    ]);
  },
  /** The top 50 error groups (errors.tsx). */
  errors: (q: Query, params: URLSearchParams) => () =>
    q.getErrorGroups({ filter: withAttributes(traceFilter(filtersFromQuery(params, "7d")), attributesFromQuery(params)), limit: 50 }),
  /** 100 runs, most recent or dearest first (runs.tsx). */
  runs: (q: Query, params: URLSearchParams) => () =>
    q.listRuns({
      filter: withAttributes(traceFilter(filtersFromQuery(params, "7d")), attributesFromQuery(params)),
      order: params.get("sort") === "cost" ? RunOrder.COST : RunOrder.UNSPECIFIED,
      limit: 100,
    }),
  /** One run with its calls, its timeline (run.tsx). */
  run: (q: Query, id: string) => () => q.getRun({ id }),
  /** The metadata keys (in the metadata view), the top 50 groups then the top 5's spend per day, and the 5 dearest calls, concurrently (attribution.tsx). */
  attribution: (q: Query, params: URLSearchParams) => () => {
    const filter = withAttributes(traceFilter(filtersFromQuery(params, "30d")), attributesFromQuery(params));
    const dimension = dimensions.find((d) => d.id === params.get("dim"))?.proto ?? Dimension.USER;
    const metadataKey = dimension === Dimension.METADATA ? (params.get("mkey") ?? "") : "";
    return Promise.all([
      dimension === Dimension.METADATA && q.getUsageByGroup({ filter, dimension: Dimension.METADATA_KEY, limit: 100 }),
      (async () => {
        const { groups } = await q.getUsageByGroup({ filter, dimension, metadataKey, limit: 50 });
        const top = groups.slice(0, 5);
        const values = top.filter((g) => !g.other).map((g) => g.value);
        if (top.length > 0)
          await q.getUsageByGroupAndDay({
            filter,
            dimension,
            metadataKey,
            values: values.length > 0 ? values : [""],
            other: top.some((g) => g.other),
          });
      })(),
      q.listTraces({ filter, pageSize: 5, order: TraceOrder.COST }),
    ]);
  },
  /** A page of 50 traces and the models of the range for the filter bar, concurrently (traces.tsx). */
  traces:
    (q: Query, params: URLSearchParams, cursor = "") =>
    () => {
      const filters = filtersFromQuery(params);
      const order = params.get("order") === "cost" ? TraceOrder.COST : TraceOrder.TIME;
      return Promise.all([
        q.getUsageByModel({ filter: modelsFilter(filters) }),
        q.listTraces({ filter: withAttributes(traceFilter(filters), attributesFromQuery(params)), pageSize: 50, cursor, order }),
      ]);
    },
};

interface Row {
  page: string;
  address: string;
  timing: Timing;
}

/** The pages' rows, and what the month held for a lead to see. */
async function readPages(q: Query): Promise<{ rows: Row[]; month: string }> {
  const rows: Row[] = [];
  const measure = async (page: string, address: string, read: () => Promise<unknown>) => {
    if (only && page !== "baseline" && !only.test(`${page} ${address}`)) return;
    const timing = await time(read);
    rows.push({ page, address, timing });
    console.error(`${page} ${address}: median ${timing.median.toFixed(1)} ms, p95 ${timing.p95.toFixed(1)} ms, ${timing.runs} runs`);
  };
  const params = (query: string) => new URLSearchParams(query);

  // What a lead clicks on: the heaviest user, the commonest error group, the dearest and the latest run.
  const month = withAttributes(traceFilter(filtersFromQuery(params("range=30d"))), attributesFromQuery(params("")));
  const topUser = (await q.getUsageByGroup({ filter: month, dimension: Dimension.USER, limit: 1 })).groups[0]!.value;
  const errors = await q.getErrorGroups({ filter: month, limit: 1 });
  const topGroup = errors.groups[0]!.id;
  const dearest = (await q.listRuns({ filter: month, order: RunOrder.COST, limit: 1 })).runs[0]!.id;
  const latest = (await q.listRuns({ filter: month, limit: 1 })).runs[0]!.id;
  // A cursor about halfway down the month: the page after the one that ends 15 days ago.
  const middle = new Date(Date.now() - 15 * 86_400_000).toISOString().slice(0, 16);
  const deepCursor = (await q.listTraces({ filter: traceFilter(filtersFromQuery(params(`range=custom&to=${middle}`))), pageSize: 50 }))
    .page!.nextCursor;
  const oneTrace = (await q.listTraces({ pageSize: 1 })).page!.traces[0]!.id;
  const from36h = new Date(Date.now() - 36 * hourMs).toISOString().slice(0, 16);

  // The floor every read stands on: one trace by id (the socket, the session check, the JSON).
  await measure("baseline", `GetTrace of one trace`, () => q.getTrace({ id: oneTrace }));
  for (const address of [
    "range=30d",
    "range=30d&provider=anthropic&model=claude",
    `range=30d&user=${topUser}`,
    "range=30d&env=production",
    `range=custom&from=${from36h}`,
    `range=custom&from=${from36h}&provider=openai`,
  ])
    await measure("Overview", address, pages.overview(q, params(address)));
  for (const address of ["range=7d", "range=30d", "range=30d&model=o3"]) await measure("Errors", address, pages.errors(q, params(address)));
  await measure(
    "Traces",
    `range=30d&status=error&error_group=${topGroup}`,
    pages.traces(q, params(`range=30d&status=error&error_group=${topGroup}`)),
  );
  for (const address of ["range=7d", "range=30d&sort=cost", `range=30d&user=${topUser}`])
    await measure("Runs", address, pages.runs(q, params(address)));
  await measure("Run", `runs/${dearest} (the dearest of 30 days)`, pages.run(q, dearest));
  await measure("Run", `runs/${latest} (the latest)`, pages.run(q, latest));
  for (const address of [
    "range=30d&dim=user",
    "range=30d&dim=tag",
    "range=30d&dim=metadata&mkey=feature",
    `range=30d&dim=tag&user=${topUser}`,
    `range=30d&dim=metadata&mkey=feature&user=${topUser}`,
    "range=7d&dim=session",
  ])
    await measure("Attribution", address, pages.attribution(q, params(address)));
  for (const address of [
    "range=24h",
    "range=24h&provider=anthropic&status=error",
    "range=30d&order=cost",
    `range=30d&user=${topUser}&order=cost`,
  ])
    await measure("Traces", address, pages.traces(q, params(address)));
  await measure("Traces", "range=30d, the next page halfway down (cursor)", pages.traces(q, params("range=30d"), deepCursor));
  const held = `The project's last 30 days held ${errors.totalErrors.toLocaleString("en-US")} failed calls in ${errors.totalGroups} error groups (the commonest: \`${errors.groups[0]!.message}\`).`;
  return { rows, month: held };
}

async function main(): Promise<void> {
  let mongo: MongoTestServer | undefined;
  let uri: string | undefined;
  const dataDir = args["data-dir"] ?? mkdtempSync(join(tmpdir(), "calltrace-bench-dashboard-"));
  if (storeKind === "mongo") {
    mongo = await startMongoTestServer();
    uri = mongo.freshUri();
  }
  const config = {
    ...resolveConfig({}, {}),
    port: 0,
    dataDir,
    logLevel: "silent",
    groupRankInSql: args["group-rank-in-sql"] !== "false",
    attributeSetsRead: args["attribute-sets-read"] !== "false",
    ...(uri ? { mongodbUri: uri } : {}),
  };
  const reuse = join(dataDir, "seeded.json");
  let seeded: Seeded;
  if (!uri && existsSync(reuse)) {
    seeded = JSON.parse(readFileSync(reuse, "utf8")) as Seeded;
    if (seeded.seeding.traces !== traceCount + Math.floor(traceCount / 10))
      throw new Error(`${dataDir} holds another size (${seeded.seeding.traces} traces)`);
    console.error(`reusing the store seeded in ${dataDir}`);
  } else {
    seeded = await seed(config);
    if (args["data-dir"] && !uri) writeFileSync(reuse, JSON.stringify(seeded));
  }

  // A service started afresh, so no statement or page cache from seeding flatters the reads.
  const service = await startService(config, createLogger("silent"));
  const loadBefore = loadavg()[0]!;
  let read: Awaited<ReturnType<typeof readPages>>;
  try {
    read = await readPages(await signIn(service.url, seeded.email, seeded.projectId));
  } finally {
    await service.close(1000);
    await mongo?.close();
    if (!args["data-dir"]) rmSync(dataDir, { recursive: true, force: true });
  }
  const loadAfter = loadavg()[0]!;
  const { rows, month } = read;

  const storeName = uri
    ? mongo?.managed
      ? "MongoDB adapter on FerretDB 1.24 (SQLite backend)"
      : "MongoDB adapter (MONGODB_URI)"
    : "embedded store (SQLite)";
  const command = `${traceCount !== 1_000_000 ? `BENCH_DASHBOARD_TRACES=${traceCount} ` : ""}node --import tsx bench/dashboard-reads.ts${uri ? " --store mongo" : ""}`;
  const s = seeded.seeding;
  const baseline = rows[0]!.timing;
  const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
  const body = [
    `### Dashboard reads: ${storeName}, ${fmt(traceCount)} traces`,
    "",
    `\`${command}\`: ${fmt(s.traces)} traces over ${days} days, ${fmt(traceCount)} of them in the project read and ${fmt(s.traces - traceCount)} in nine others, interleaved ` +
      "(bench/support/dashboard-traffic.ts: 75% of calls in runs of 2 to 15 calls, a run a session or an OTLP trace; users skewed, a few of 10,000 making most calls; 2 of 50 tags, metadata `feature` and `team`, an environment; 7 models; 2.5% of calls failing, 8% of o3's, with 8 kinds of provider error texts carrying ids and figures). " +
      month,
    "",
    `Seeding through \`traces import\`'s path (importTraces into the store's batch writer, ${storeKind === "sqlite" ? `${commitTracesMax.toLocaleString("en-US")} traces a transaction, five indexes built after the rows as D77 decides` : "its writeBatch"}): ` +
      `**${fmt(s.tracesPerSecond)} traces/s** (${fmt(s.seconds)} s), ${fmt(s.cpuUsPerTrace)} µs of CPU per trace (every thread: the import's and the writer's); ` +
      `10 million at this rate would take ${(10_000_000 / s.tracesPerSecond / 60).toFixed(1)} minutes (target: under 10). Load average (1 min) ${s.loadBefore.toFixed(1)} before seeding, ${s.loadAfter.toFixed(1)} after.`,
    "",
    `Each row is one page's reads for its address, as the page makes them (concurrently where it does), through a signed-in Connect JSON client over HTTP/1.1 on a socket; ` +
      `up to ${runs} timed runs after warm-up (fewer past ${rowBudgetMs / 1000} s a row, at least 3; one cold run for a page over ${slowReadMs / 1000} s). ` +
      `CPU ms is this process's CPU per page read (the service and its client, every thread), which load does not inflate as it does the times. ` +
      `${machineLine()}, ${cpus().length} cores shared with other work: load average (1 min) ${loadBefore.toFixed(1)} before the reads, ${loadAfter.toFixed(1)} after.`,
    "",
    table(
      ["page", "address", "median ms", "p95 ms", "runs", "CPU ms", "median × baseline", `p95 under ${targetMs} ms`],
      rows.map(({ page, address, timing: t }) => [
        page,
        `\`${address}\``,
        t.median.toFixed(1),
        t.p95.toFixed(1),
        t.runs,
        t.cpuMs.toFixed(1),
        (t.median / baseline.median).toFixed(1),
        page === "baseline" ? "" : t.p95 < targetMs ? "yes" : "**no**",
      ]),
    ),
  ].join("\n");
  console.log(body);
  // A partial table would replace the whole one.
  if (!only) writeDashboardBlock(`${storeKind}-${traceCount}`, body);
}

/** bench/RESULTS.md's dashboard section holds one block per store and size; a run replaces only its own. */
function writeDashboardBlock(kind: string, body: string): void {
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
