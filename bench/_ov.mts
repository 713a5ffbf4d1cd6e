import { readFileSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { openSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { TraceFilterSchema } from "../gen/calltrace/v1/query_pb.js";
const [dir, n = "5"] = process.argv.slice(2) as [string, string];
const project = JSON.parse(readFileSync(`${dir}/seeded.json`, "utf8")).projectId;
const store = openSqliteStore(dir, { retentionDays: 90 });
const day = 86_400_000;
const extra = JSON.parse(process.env.OV_FILTER ?? "{}");
const now = Date.now();
const f = create(TraceFilterSchema, { since: timestampFromMs(now - 30 * day), ...extra });
const prev = create(TraceFilterSchema, { since: timestampFromMs(now - 60 * day), until: timestampFromMs(now - 30 * day), ...extra });
const all: [string, () => Promise<unknown>][] = [
  ["totals", () => store.usageTotals(project, f)],
  ["byModel", () => store.usageByModel(project, f)],
  ["byDay", () => store.usageByDay(project, f)],
  ["latency", () => store.latencyHistogram(project, f)],
  ["key", () => store.usageByGroup(project, f, { kind: "key" }, 10)],
  ["provider", () => store.usageByGroup(project, f, { kind: "provider" }, 10)],
  ["dayTotals", () => store.usageByDayTotals(project, f)],
  ["prevTotals", () => store.usageTotals(project, prev)],
];
const cases = all.filter(([name]) => !process.env.OV_ONLY || name === process.env.OV_ONLY);
let total = 0;
for (const [name, read] of cases) {
  await read();
  const cpu: number[] = [];
  for (let i = 0; i < Number(n); i++) {
    const c0 = process.cpuUsage();
    await read();
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  cpu.sort((a, b) => a - b);
  total += cpu[Math.floor(cpu.length / 2)]!;
  console.log(`${name}: CPU ms median ${cpu[Math.floor(cpu.length / 2)]!.toFixed(1)} min ${cpu[0]!.toFixed(1)}`);
}
console.log("sum of medians", total.toFixed(1));
await store.close();
