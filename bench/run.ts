// `npm run bench`: every service benchmark in turn, each writing its section of bench/RESULTS.md.
// BENCH_ONLY=ingest,mongo runs a subset.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { compiledService, repoRoot } from "./support/processes.js";

const benchmarks = ["ingest", "otlp-ingest", "otlp-reader", "mongo-ingest", "redis-ingest", "dashboard-reads", "pricing", "startup"];
const only = process.env.BENCH_ONLY?.split(",");
// Built once here for every benchmark below (they inherit CALLTRACE_BENCH_BUILT).
compiledService();
let failed = 0;
for (const name of benchmarks) {
  if (only && !only.includes(name)) continue;
  const file = `bench/${name}.ts`;
  if (!existsSync(`${repoRoot}/${file}`)) continue;
  console.log(`\n### ${name}`);
  const result = spawnSync(process.execPath, ["--import", "tsx", file], { cwd: repoRoot, stdio: "inherit" });
  if (result.status !== 0) failed++;
}
process.exitCode = failed > 0 ? 1 : 0;
