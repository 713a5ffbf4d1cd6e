// Bundles the benchmark (it shares the fake provider with the tests) and runs
// it against the built package; `npm run bench` builds the package first.
// With --write-results, its table also replaces the TypeScript SDK's section
// of bench/RESULTS.md (between its markers, created at the end if absent).
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const BEGIN = "<!-- sdk-typescript:begin -->";
const READING = `How to read it: the canned-answer rows give the SDK's own cost without the noise of a network round trip: \
the wall column is what the wrapper adds to a call, the CPU column (service up) adds delivering the trace over the \
pipelined connection. The other rows go through the local fake provider; on a shared 2-core machine their ranges \
are far wider than the effect, so read their medians with the ranges beside them. With the service down, nothing \
is sent: traces queue, are retried with backoff, and the oldest are dropped.`;
const END = "<!-- sdk-typescript:end -->";

process.chdir(fileURLToPath(new URL("..", import.meta.url)));
await build({
  entryPoints: ["bench/overhead.ts", "bench/fake-provider-process.ts"],
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node18",
  packages: "external",
  outdir: "bench/.out",
  outExtension: { ".js": ".mjs" },
  logLevel: "warning",
});
const run = spawnSync(process.execPath, ["bench/.out/overhead.mjs"], { stdio: ["ignore", "pipe", "inherit"] });
process.stdout.write(run.stdout);
if (run.status !== 0) process.exit(run.status ?? 1);

if (process.argv.includes("--write-results")) {
  const results = "../../bench/RESULTS.md";
  const text = existsSync(results) ? readFileSync(results, "utf8") : "# Benchmark results\n";
  const section = `${BEGIN}\n## TypeScript SDK: overhead per traced call\n\n\`npm --prefix sdk/typescript run bench\`, ${new Date().toISOString().slice(0, 10)}.\n\n${run.stdout.toString().trim()}\n\n${READING}\n${END}`;
  const start = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  const updated =
    start >= 0 && end > start
      ? text.slice(0, start) + section + text.slice(end + END.length)
      : `${text.trimEnd()}\n\n${section}\n`;
  writeFileSync(results, updated);
}
