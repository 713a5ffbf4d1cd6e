// Bytes per stored trace, and what a client sending a new value on every trace costs (issue 27,
// items 3 and 4). Stores N traces of each kind into a fresh store and reports the bytes per trace
// with each table's and index's share (SQLite's dbstat; MongoDB's collStats), the store port's
// write rate against plain traces in the same run, and the group-by reads at that cardinality:
//   plain         the spec's bare trace
//   attributed    a user of 10,000, a session of a million, 2 of 50 tags, two metadata keys, an environment
//   exploding     a new user, session, 8 new tags and 4 new metadata values on every trace
// Attributed and exploding run twice: without a bound on values per day (GROUP_VALUES_PER_DAY=0,
// as before D54) and with the default bound.
//
//   node --import tsx bench/storage.ts                  200,000 traces of each kind, embedded store
//   --traces 20000   fewer traces      --store mongo   MongoDB adapter on FerretDB (test/support/ferretdb.ts) or MONGODB_URI
//   --kinds exploding   only these beside plain      --bounds 10000   only these bounds      --write   replace the section in bench/RESULTS.md
//   --runs 1   reads of each group-by (default 5, the median reported; 0 reads none)
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { deflateRawSync } from "node:zlib";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { performance } from "node:perf_hooks";
import Database from "better-sqlite3";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { TraceFilterSchema } from "../gen/calltrace/v1/query_pb.js";
import { StoredTraceSchema, type StoredTrace } from "../gen/calltrace/v1/trace_pb.js";
import type { GroupDimension } from "../src/store/group-dimension.js";
import { openMongoStore } from "../src/store/mongo/mongo-store.js";
import { openSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import type { Store } from "../src/store/store.js";
import { defaultValuesPerDay } from "../src/store/value-cap.js";
import { startMongoTestServer, type MongoTestServer } from "../test/support/ferretdb.js";
import { attribution, seededRandom } from "./support/attributed-traffic.js";
import { machineLine, table, writeResultsSection } from "./support/results.js";

const { values: args } = parseArgs({
  options: {
    traces: { type: "string", default: "200000" },
    store: { type: "string", default: "sqlite" },
    write: { type: "boolean", default: false },
    kinds: { type: "string", default: "attributed,exploding" },
    bounds: { type: "string", default: `0,${defaultValuesPerDay}` },
    runs: { type: "string", default: "5" },
  },
});
const count = Number(args.traces);
/** Reads of each group-by, whose median is reported (FerretDB takes minutes for 5 of every one). */
const readRuns = Math.max(0, Number(args.runs));
const storeKind = args.store === "mongo" ? "mongo" : "sqlite";
const batchSize = 1000;
const dayMs = 86_400_000;
const accountId = "acc_storage";

type Kind = "plain" | "attributed" | "exploding";

/** Trace `i` of a kind, received on yesterday's UTC day, in order. */
function trace(kind: Kind, i: number, next: () => number, day: number): StoredTrace {
  const base = {
    receivedAt: timestampFromMs(day + Math.floor((i / count) * dayMs)),
    keyId: "key_storage",
    accountId,
    country: "US",
    provider: "openai",
    model: "gpt-4o",
    tokensIn: 200 + Math.floor(next() * 2000),
    tokensOut: 20 + Math.floor(next() * 500),
    latencyMs: 100 + Math.floor(next() * 3000),
    costUsd: Math.floor(next() * 1e4) / 1e6,
    status: next() < 0.03 ? "error" : "success",
  };
  if (kind === "plain") return create(StoredTraceSchema, base);
  // The attribution real apps send (bench/support/attributed-traffic.ts, as the ingest bench sends it).
  if (kind === "attributed") return create(StoredTraceSchema, { ...base, ...attribution(next) });
  return create(StoredTraceSchema, {
    ...base,
    userId: `user-${i}-${Math.floor(next() * 1e9)}`,
    sessionId: `session-${i}-${Math.floor(next() * 1e9)}`,
    tags: Array.from({ length: 8 }, (_, t) => `t${t}-${i}`),
    metadata: Object.fromEntries(Array.from({ length: 4 }, (_, m) => [`k${m}`, `value-${i}-${m}`])),
    environment: "production",
  });
}

interface Part {
  name: string;
  bytes: number;
}

interface Measured {
  kind: Kind;
  bound: number;
  tracesPerSecond: number;
  bytesPerTrace: number;
  parts: Part[];
  compressible?: Compressible | undefined;
  reads: [string, number][];
}

let mongo: MongoTestServer | undefined;

async function openStore(
  bound: number,
): Promise<{ store: Store; size: () => Promise<{ total: number; parts: Part[]; compressible?: Compressible }>; done: () => void }> {
  if (storeKind === "mongo") {
    mongo ??= await startMongoTestServer();
    const uri = mongo.freshUri();
    const store = await openMongoStore(uri, { groupValuesPerDay: bound, retentionDays: 0 });
    return { store, size: () => mongoSize(uri), done: () => {} };
  }
  const dir = mkdtempSync(join(tmpdir(), "calltrace-storage-"));
  const store = openSqliteStore(dir, { groupValuesPerDay: bound, retentionDays: 0 });
  return { store, size: async () => sqliteSize(join(dir, "calltrace.db")), done: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Every table's and index's pages (dbstat), after a checkpoint folds the WAL into the file. */
function sqliteSize(file: string): { total: number; parts: Part[] } {
  const db = new Database(file);
  db.pragma("wal_checkpoint(TRUNCATE)");
  const parts = db.prepare(`SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC`).all() as Part[];
  db.close();
  return { total: statSync(file).size, parts };
}

/** Documents and indexes of every collection (collStats); FerretDB answers sizes of its own backend. */
async function mongoSize(uri: string): Promise<{ total: number; parts: Part[]; compressible: Compressible }> {
  const { BSON, MongoClient } = await import("mongodb");
  const client = await MongoClient.connect(uri);
  const db = client.db();
  const parts: Part[] = [];
  for (const { name } of await db.listCollections().toArray()) {
    const stats = (await db.command({ collStats: name })) as { size?: number; storageSize?: number; indexSizes?: Record<string, number> };
    parts.push({ name: `${name} (documents)`, bytes: stats.storageSize ?? stats.size ?? 0 });
    for (const [index, bytes] of Object.entries(stats.indexSizes ?? {})) parts.push({ name: `${name}.${index}`, bytes });
  }
  // What a real MongoDB would hold of the traces' documents: their BSON, and that BSON compressed
  // in pages of 32 KB (WiredTiger's largest leaf page) with zlib, one of its block compressors.
  const compressible: Compressible = { bson: 0, zlib: 0 };
  let page: Uint8Array[] = [];
  let pageBytes = 0;
  const flush = () => {
    if (pageBytes > 0) compressible.zlib += deflateRawSync(Buffer.concat(page)).length;
    page = [];
    pageBytes = 0;
  };
  for await (const doc of db.collection("traces").find({}, { batchSize: 5000 })) {
    const bytes = BSON.serialize(doc);
    compressible.bson += bytes.length;
    if (pageBytes + bytes.length > 32_768) flush();
    page.push(bytes);
    pageBytes += bytes.length;
  }
  flush();
  await client.close();
  parts.sort((a, b) => b.bytes - a.bytes);
  return { total: parts.reduce((s, p) => s + p.bytes, 0), parts, compressible };
}

/** The traces' documents as BSON, and compressed as a real MongoDB's storage engine would (bytes over all traces). */
interface Compressible {
  bson: number;
  zlib: number;
}

const dimensions: [string, GroupDimension][] = [
  ["user", { kind: "user" }],
  ["session", { kind: "session" }],
  ["tag", { kind: "tag" }],
  ["metadata key", { kind: "metadataKey" }],
  ["metadata value", { kind: "metadata", key: "k0" }],
];

/** Median of `readRuns` group-by reads per dimension: over whole days (the roll-ups) and over the last 36 hours (part of a day from the traces). */
async function groupReads(store: Store, day: number): Promise<[string, number][]> {
  const ranges: [string, ReturnType<typeof create<typeof TraceFilterSchema>>][] = [
    ["30 days", create(TraceFilterSchema, { since: timestampFromMs(day - 29 * dayMs), until: timestampFromMs(day + dayMs) })],
    ["36 h", create(TraceFilterSchema, { since: timestampFromMs(day + dayMs / 2), until: timestampFromMs(day + 2 * dayMs) })],
  ];
  const out: [string, number][] = [];
  for (const [rangeName, filter] of ranges) {
    for (const [name, dimension] of dimensions) {
      const times: number[] = [];
      for (let run = 0; run < readRuns; run++) {
        const started = performance.now();
        try {
          await store.usageByGroup(accountId, filter, dimension, 50);
          times.push(performance.now() - started);
        } catch (error) {
          console.error(`${name} over ${rangeName}: ${(error as Error).message}`);
          times.push(Number.NaN);
        }
      }
      times.sort((a, b) => a - b);
      out.push([`${name}, ${rangeName}`, times[Math.floor(readRuns / 2)]!]);
    }
  }
  return out;
}

async function measure(kind: Kind, bound: number): Promise<Measured> {
  const { store, size, done } = await openStore(bound);
  const next = seededRandom(27);
  const day = Math.floor(Date.now() / dayMs) * dayMs - dayMs;
  let busy = 0;
  for (let start = 0; start < count; start += batchSize) {
    const writes = [];
    for (let i = start; i < Math.min(count, start + batchSize); i++)
      writes.push({ trace: trace(kind, i, next, day), idempotencyKey: undefined });
    const started = performance.now();
    await store.writeBatch(writes);
    busy += performance.now() - started;
  }
  // MongoDB's sizes are read before the reads, which change nothing but take long on FerretDB;
  // the embedded store's once it is closed, its WAL folded into the file.
  const early = storeKind === "mongo" ? await size() : undefined;
  const reads = kind === "plain" || readRuns === 0 ? [] : await groupReads(store, day);
  await store.close();
  const { total, parts, compressible } = early ?? (await size());
  done();
  const measured = { kind, bound, tracesPerSecond: (count / busy) * 1000, bytesPerTrace: total / count, parts, compressible, reads };
  console.log(
    `${kind}, bound ${bound || "none"}: ${Math.round(measured.tracesPerSecond)} traces/s, ${Math.round(measured.bytesPerTrace)} bytes/trace; ` +
      parts
        .slice(0, 6)
        .map((p) => `${p.name} ${Math.round(p.bytes / count)}`)
        .join(", "),
  );
  return measured;
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(", ");
const loadBefore = load();
const runs: Measured[] = [];
const kinds = args.kinds.split(",");
for (const [kind, bound] of [
  ["plain", defaultValuesPerDay],
  ["attributed", 0],
  ["attributed", defaultValuesPerDay],
  ["exploding", 0],
  ["exploding", defaultValuesPerDay],
] as [Kind, number][]) {
  if (kind === "plain" || (kinds.includes(kind) && args.bounds.split(",").map(Number).includes(bound)))
    runs.push(await measure(kind, bound));
}
await mongo?.close();

const plain = runs[0]!;
const boundName = (m: Measured) => (m.kind === "plain" ? "" : m.bound === 0 ? "none (before D54)" : m.bound.toLocaleString("en"));
const summary = table(
  ["traces", "bound per day", "traces/s (store port)", "× plain", "bytes/trace", "× plain", "largest parts, bytes/trace"],
  runs.map((m) => [
    m.kind,
    boundName(m),
    Math.round(m.tracesPerSecond),
    (m.tracesPerSecond / plain.tracesPerSecond).toFixed(2),
    Math.round(m.bytesPerTrace),
    (m.bytesPerTrace / plain.bytesPerTrace).toFixed(2),
    m.parts
      .filter((p) => p.bytes / count >= 5)
      .slice(0, 8)
      .map((p) => `${p.name} ${Math.round(p.bytes / count)}`)
      .join(", "),
  ]),
);
const readRows = runs.filter((m) => m.reads.length > 0);
const reads =
  readRows.length === 0
    ? ""
    : table(
        [`group-by (top 50), median of ${readRuns}, ms`, ...readRows.map((m) => `${m.kind}, bound ${boundName(m)}`)],
        readRows[0]!.reads.map(([name], i) => [name, ...readRows.map((m) => (Number.isNaN(m.reads[i]![1]) ? "failed" : m.reads[i]![1].toFixed(0)))]),
      );
const section = `## Storage per trace and the value bound (\`node --import tsx bench/storage.ts${storeKind === "mongo" ? " --store mongo" : ""}\`, bench/storage.ts): ${storeKind === "mongo" ? "MongoDB adapter" : "embedded store"}

${count.toLocaleString("en")} traces of each kind on one UTC day, each kind into a fresh store, batches of ${batchSize} through the store port (the writer thread on the embedded store). ${machineLine()}; load average ${loadBefore} before, ${load()} after.

${summary}
${
  storeKind === "mongo"
    ? `
${table(
  ["traces", "bound per day", "traces' documents as FerretDB stores them, bytes/trace", "as BSON", "as BSON in 32 KB pages, zlib"],
  runs.map((m) => [
    m.kind,
    boundName(m),
    Math.round((m.parts.find((p) => p.name === "traces (documents)")?.bytes ?? 0) / count),
    Math.round((m.compressible?.bson ?? 0) / count),
    Math.round((m.compressible?.zlib ?? 0) / count),
  ]),
)}
`
    : ""
}
${reads}`;
console.log(`\n${section}`);
if (args.write) writeResultsSection(`storage-${storeKind}-${count}`, section);
