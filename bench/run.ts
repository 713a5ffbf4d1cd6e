// `npm run bench`: every service benchmark in turn, each writing its section of bench/RESULTS.md.
// BENCH_ONLY=ingest,mongo runs a subset.
import { spawnSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { compiledService, repoRoot, seededStore } from "./support/processes.js";

const benchmarks = ["ingest", "otlp-ingest", "otlp-reader", "mongo-ingest", "redis-ingest", "dashboard-reads", "pricing", "startup", "import", "commit-pages"];
const only = process.env.BENCH_ONLY?.split(",");
const selected = benchmarks.filter((name) => !only || only.includes(name));
// Built once here for every benchmark below (they inherit CALLTRACE_BENCH_BUILT), and the store the
// ingest benchmarks (and commit-pages) copy seeded once (CALLTRACE_BENCH_SEEDED).
compiledService();
const seeded = selected.some((name) => ["ingest", "otlp-ingest", "commit-pages"].includes(name)) ? seededStore() : undefined;
let failed = 0;
for (const name of selected) {
  const file = `bench/${name}.ts`;
  if (!existsSync(`${repoRoot}/${file}`)) continue;
  console.log(`\n### ${name}`);
  const result = spawnSync(process.execPath, ["--import", "tsx", file], { cwd: repoRoot, stdio: "inherit" });
  if (result.status !== 0) failed++;
}
if (seeded) rmSync(seeded.dataDir, { recursive: true, force: true });
process.exitCode = failed > 0 ? 1 : 0;
