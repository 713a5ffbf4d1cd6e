// `BENCH_ONLY=commit-pages npm run bench`: why an attributed trace costs the writer several times
// what a plain one does. Commits plain and then attributed traces, in commits the size of a REST
// load's group commit, into a copy of the seeded store (a million attributed traces), and counts
// the pages each commit writes to the WAL, by the table or index each page belongs to (the WAL's
// frame headers name the page, `dbstat` its owner): a figure the machine's load does not change.
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import type { StoredTrace } from "../gen/calltrace/v1/trace_pb.js";
import { type RowBatch, sqliteBatchCommit } from "../src/store/sqlite/sqlite-batch-commit.js";
import { openSqliteDatabase } from "../src/store/sqlite/sqlite-database.js";
import { idOf } from "../src/store/sqlite/sqlite-id-numbers.js";
import { writeToRow } from "../src/store/sqlite/sqlite-trace-row.js";
import { defaultValuesPerDay, valueCap } from "../src/store/value-cap.js";
import { attributedStoredTrace, seededRandom } from "./support/attributed-traffic.js";
import { call } from "../test/support/stored-call.js";
import { seededStore } from "./support/processes.js";
import { machineLine, table, writeResultsSection } from "./support/results.js";

const traces = Number(process.env.BENCH_COMMIT_TRACES ?? 5_000);
/** Traces per commit: what 50 wrk connections' requests gather into (bench/ingest.ts). */
const perCommit = Number(process.env.BENCH_COMMIT_SIZE ?? 25);
const walHeaderBytes = 32;
const frameHeaderBytes = 24;

const seeded = seededStore();
const dir = mkdtempSync(join(tmpdir(), "calltrace-commit-pages-"));
const file = join(dir, "calltrace.db");
copyFileSync(join(seeded.dataDir, "calltrace.db"), file);
const db = openSqliteDatabase(file);
// Every page a commit writes stays in the WAL until read here.
db.pragma("wal_autocheckpoint = 0");
db.pragma("wal_checkpoint(TRUNCATE)");
const pageSize = db.pragma("page_size", { simple: true }) as number;
const [accountId, keyId] = db.prepare(`SELECT ${idOf("project_num")}, ${idOf("key_num")} FROM traces LIMIT 1`).raw().get() as [string, string];
const commit = sqliteBatchCommit(db, valueCap(defaultValuesPerDay));

// The spec's bare trace, the same every time but its time.
const plainTrace = (at: number): StoredTrace =>
  call({ at, keyId, accountId, country: "US", model: "gpt-4o-2024-08-06", tokensIn: 1200, tokensOut: 350, latencyMs: 842, costUsd: 0.0065 });

/** The pages written to the WAL since it was last emptied, by page number (a page written twice counts twice). */
function walPages(): number[] {
  const wal = readFileSync(`${file}-wal`);
  const pages: number[] = [];
  for (let at = walHeaderBytes; at + frameHeaderBytes <= wal.length; at += frameHeaderBytes + pageSize) pages.push(wal.readUInt32BE(at));
  return pages;
}

interface Measured {
  cpuUs: { user: number; system: number };
  pages: number[];
}

function measure(traceAt: (i: number) => StoredTrace): Measured {
  const batches: RowBatch[] = [];
  for (let i = 0; i < traces; i += perCommit) {
    const batch: RowBatch = { traces: [], idempotencyKeys: [], quotaRemaining: [] };
    for (let k = i; k < Math.min(traces, i + perCommit); k++) {
      const { values, claimKey } = writeToRow({ trace: traceAt(k), idempotencyKey: undefined });
      batch.traces.push(values);
      batch.idempotencyKeys.push(claimKey);
      batch.quotaRemaining.push(null);
    }
    batches.push(batch);
  }
  const before = process.cpuUsage();
  for (const batch of batches) commit(batch, Date.now());
  const cpu = process.cpuUsage(before);
  const pages = walPages();
  return { cpuUs: { user: cpu.user / traces, system: cpu.system / traces }, pages };
}

const loadBefore = loadavg()[0]!;
const start = Date.now();
const rand = seededRandom(2027);
const plain = measure((i) => plainTrace(start + i));
const owners = () => new Map((db.prepare("SELECT pageno, name FROM dbstat").raw().all() as [number, string][]).map(([page, name]) => [page, name]));
const plainOwners = owners();
db.pragma("wal_checkpoint(TRUNCATE)");
const attributed = measure((i) => attributedStoredTrace(rand, { accountId, keyId }, start + traces + i));
const attributedOwners = owners();
db.close();
rmSync(dir, { recursive: true, force: true });

/** Pages per trace by owner, largest first. */
function byOwner(pages: number[], ownerOf: Map<number, string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const page of pages) {
    const owner = ownerOf.get(page) ?? "(free list, pointer map)";
    counts.set(owner, (counts.get(owner) ?? 0) + 1 / traces);
  }
  return counts;
}
const plainBy = byOwner(plain.pages, plainOwners);
const attributedBy = byOwner(attributed.pages, attributedOwners);
const owned = [...attributedBy].sort((a, b) => b[1] - a[1]).map(([name]) => name);
for (const name of plainBy.keys()) if (!owned.includes(name)) owned.push(name);
const f = (x: number | undefined, digits = 2) => (x ?? 0).toFixed(digits);
const perTrace = (m: Measured) => m.pages.length / traces;
const sysPerPage = (m: Measured) => m.cpuUs.system / perTrace(m);

const markdown = `## What a commit writes: WAL pages per trace, plain and attributed (\`BENCH_ONLY=commit-pages npm run bench\`, bench/commit-pages.ts)

${machineLine()}; ${traces.toLocaleString("en-US")} traces of each kind in commits of ${perCommit} through the store's batch commit (the writer thread's transaction), into a copy of the seeded store (${seeded.seeding.traces.toLocaleString("en-US")} attributed traces); ${pageSize}-byte pages; load average ${loadBefore.toFixed(1)} before, ${loadavg()[0]!.toFixed(1)} after (the page counts do not depend on it; the CPU figures do).

| | plain | attributed | × plain |
| --- | --- | --- | --- |
| WAL pages written per trace | ${f(perTrace(plain))} | ${f(perTrace(attributed))} | ${f(perTrace(attributed) / perTrace(plain), 1)} |
| writer CPU µs per trace, user + kernel | ${f(plain.cpuUs.user, 0)} + ${f(plain.cpuUs.system, 0)} | ${f(attributed.cpuUs.user, 0)} + ${f(attributed.cpuUs.system, 0)} | ${f((attributed.cpuUs.user + attributed.cpuUs.system) / (plain.cpuUs.user + plain.cpuUs.system), 1)} |
| kernel µs per WAL page | ${f(sysPerPage(plain), 1)} | ${f(sysPerPage(attributed), 1)} | |

${table(
  ["table or index", "plain, pages per trace", "attributed, pages per trace"],
  owned.filter((name) => (attributedBy.get(name) ?? 0) >= 0.05 || (plainBy.get(name) ?? 0) >= 0.05).map((name) => [name, f(plainBy.get(name)), f(attributedBy.get(name))]),
)}

A plain trace (the spec's bare trace, the same every time) lands where the one before it did in
every index, so a commit writes each index's last page once for all its traces. An attributed
trace's user, session, run, cost, latency and token count put it at a random place in each index
and roll-up keyed by them: on a store of a million traces nearly every such place is a page of its
own, written whole to the WAL (and later back to the database) at each commit, and read first when
it is not in the page cache. That is the floor of the attributed rows in bench/ingest.ts: their
writer spends about as many times the plain trace's CPU as it writes pages, most of the extra in
the kernel.
`;
writeResultsSection("commit-pages", markdown);
console.log(markdown);
