// How `traces import` holds up as the embedded store grows (issue 27 item 5): N traces of the
// dashboard bench's history (bench/support/dashboard-traffic.ts, ten projects interleaved) through
// importTraces into one store, reporting every STEP traces the rate, this process's CPU per trace
// (user and kernel, every thread) and the bytes read and written per trace (/proc/self/io: the
// WAL's appends, the checkpoints' reads of the WAL and writes into the database file). The bytes
// do not depend on the machine's load; rates and CPU do. DEFER_INDEXES (auto, on, off; as
// `traces import --defer-indexes`, D77) says whether the five scattered indexes are built after the
// rows: then a last row reports their build, and a total line the whole import with it.
//   N=3000000 STEP=500000 DEFER_INDEXES=off node --import tsx bench/import-seeding.ts
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { type IndexDeferral, indexDeferrals, withIndexesDeferred } from "../src/import/deferred-indexes.js";
import type { ImportItem } from "../src/import/import-item.js";
import { importTraces } from "../src/import/trace-import.js";
import { commitTracesMax } from "../src/store/sqlite/sqlite-batch-commit.js";
import { openSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { dashboardTraffic } from "./support/dashboard-traffic.js";

const total = Number(process.env.N ?? 1_000_000);
const step = Number(process.env.STEP ?? 250_000);
const deferral = (process.env.DEFER_INDEXES ?? "auto") as IndexDeferral;
if (!indexDeferrals.includes(deferral)) throw new Error(`DEFER_INDEXES must be one of ${indexDeferrals.join(", ")}`);
const dir = mkdtempSync(join(tmpdir(), "calltrace-bench-import-seeding-"));
const store = openSqliteStore(dir);
const projects = Array.from({ length: 10 }, (_, i) => ({ id: `prj_${i}`, keyIds: [`key_${i}a`, `key_${i}b`] }));
const [read, ...others] = projects as [(typeof projects)[0], ...typeof projects];
async function* items(): AsyncGenerator<ImportItem> {
  let n = 0;
  for (const write of dashboardTraffic(read, others, total, 60, Date.now() - 60_000)) yield { where: `call ${++n}`, write };
}

/** Bytes this process read and wrote through system calls so far. */
function io(): { read: number; written: number } {
  const fields = new Map(readFileSync("/proc/self/io", "utf8").trim().split("\n").map((line) => line.split(": ") as [string, string]));
  return { read: Number(fields.get("rchar")), written: Number(fields.get("wchar")) };
}

const started = performance.now();
let last = { at: started, cpu: process.cpuUsage(), io: io(), traces: 0 };
/**
 * A table row for the traces imported since the last row (`label` absent), or for what followed
 * them (the index build), per trace imported.
 */
function report(traces: number, label?: string): void {
  const now = { at: performance.now(), cpu: process.cpuUsage(), io: io(), traces };
  const n = label ? traces : now.traces - last.traces;
  const perTrace = (x: number) => (x / n).toFixed(1);
  const rate = label ? "" : Math.round(n / ((now.at - last.at) / 1000)).toLocaleString("en-US");
  console.log(
    `| ${label ?? now.traces.toLocaleString("en-US")} | ${Math.round((now.at - started) / 1000)} | ${rate} | ${perTrace(now.cpu.user - last.cpu.user)} | ${perTrace(now.cpu.system - last.cpu.system)} | ${perTrace((now.io.read - last.io.read) / 1024)} | ${perTrace((now.io.written - last.io.written) / 1024)} | ${loadavg()[0]!.toFixed(1)} |`,
  );
  last = now;
}
console.log(
  `${total.toLocaleString("en-US")} traces of the project read and a tenth as many of nine others, ${commitTracesMax.toLocaleString("en-US")} a transaction, DEFER_INDEXES=${deferral}; load average ${loadavg()[0]!.toFixed(1)}`,
);
console.log("| traces | s | traces/s | user µs/trace | kernel µs/trace | KB read/trace | KB written/trace | load |");
try {
  const cpuBefore = process.cpuUsage();
  let built = false;
  const counts = await withIndexesDeferred(
    store,
    deferral,
    total + Math.floor(total / 10),
    (line) => {
      if (line.startsWith("built")) built = true;
      console.error(line);
    },
    async () => {
      const counts = await importTraces(
        items(),
        store,
        (r) => {
          throw new Error(`${r.where}: ${r.reason}`);
        },
        (counts) => {
          if (counts.read - last.traces >= step) report(counts.read);
        },
      );
      if (counts.read > last.traces) report(counts.read);
      return counts;
    },
  );
  if (built) report(counts.read, "indexes built after");
  const cpu = process.cpuUsage(cpuBefore);
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `total: ${counts.read.toLocaleString("en-US")} traces in ${Math.round(seconds)} s, ${Math.round(counts.read / seconds).toLocaleString("en-US")} traces/s, ${((cpu.user + cpu.system) / counts.read).toFixed(1)} µs CPU per trace; load average ${loadavg()[0]!.toFixed(1)}`,
  );
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
