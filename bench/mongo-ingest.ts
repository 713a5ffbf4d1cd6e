// Ingest into the MongoDB store, against the test server (FerretDB 1.24, SQLite backend, which
// test/support/ferretdb.ts starts), or MONGODB_URI's server when set. Beside it, in the same run
// and on the same server: a plain script doing back-to-back single insertOne calls with the same
// write concern (bench/insert-one-baseline.ts). Target: the service at least 3x the baseline.
//   node --import tsx bench/mongo-ingest.ts        (writes its section of bench/RESULTS.md)
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openMongoStore } from "../src/store/mongo/mongo-store.js";
import { startMongoTestServer } from "../test/support/ferretdb.js";
import { wrkPost, type LoadSettings } from "./support/load.js";
import { calltrace, compiledService, repoRoot, startListening } from "./support/processes.js";
import { machineLine, writeResultsSection } from "./support/results.js";

const settings: LoadSettings = {
  connections: Number(process.env.BENCH_CONNECTIONS ?? 64),
  seconds: Number(process.env.BENCH_SECONDS ?? 10),
  warmupSeconds: Number(process.env.BENCH_WARMUP_SECONDS ?? 3),
};
const targetRatio = 3;

const mongo = await startMongoTestServer();
const server = process.env.MONGODB_URI ? "MONGODB_URI's server" : "FerretDB v1.24.2 (SQLite backend, same machine)";
try {
  // The baseline first, on a database of its own, so the service's run does not share the server with it.
  const baselineRun = spawnSync(process.execPath, ["--import", "tsx", "bench/insert-one-baseline.ts", mongo.freshUri(), String(settings.seconds)], {
    cwd: repoRoot,
    encoding: "utf8",
  });
  if (baselineRun.status !== 0) throw new Error(`baseline failed: ${baselineRun.stderr}`);
  const baseline = JSON.parse(baselineRun.stdout.trim().split("\n").pop()!) as { insertsPerSecond: number; p50Ms: number; p99Ms: number };
  console.error(`baseline: ${baseline.insertsPerSecond.toFixed(0)} inserts/s, p99 ${baseline.p99Ms.toFixed(1)} ms`);

  const uri = mongo.freshUri();
  const dir = mkdtempSync(join(tmpdir(), "calltrace-bench-mongo-"));
  const plansFile = join(dir, "plans.json");
  writeFileSync(plansFile, JSON.stringify({ bench: { per_minute: 1_000_000_000, per_month: 1_000_000_000_000 } }));
  const common = ["--mongodb-uri", uri, "--plans-file", plansFile, "--data-dir", dir];
  const key = calltrace(["keys", "create", "--plan", "bench", ...common]);
  const service = await startListening(compiledService("serve", "--port", "0", ...common), { LOG_LEVEL: "info" });
  let drained: { batches: number; writes: number } | undefined;
  let buffered = "";
  service.child.stdout!.on("data", (chunk: Buffer) => {
    buffered += chunk.toString();
    const match = /"batches":(\d+),"writes":(\d+)[^\n]*"msg":"writer drained"/.exec(buffered);
    if (match) drained = { batches: Number(match[1]), writes: Number(match[2]) };
  });

  const body = JSON.stringify({ provider: "openai", model: "gpt-4o-2024-08-06", tokens_in: 1200, tokens_out: 350, latency_ms: 842, cost_usd: 0.0065, api_key: key, status: "success" });
  const load = await wrkPost(`http://127.0.0.1:${service.port}/v1/traces`, body, { authorization: `Bearer ${key}`, "content-type": "application/json" }, settings);
  const peakRss = service.peakRssMiB();
  await service.stop();
  const store = await openMongoStore(uri);
  let stored = 0;
  for await (const _ of store.exportTraces({})) stored++;
  await store.close();

  const averageBatch = drained && drained.batches > 0 ? drained.writes / drained.batches : Number.NaN;
  const ratio = load.requestsPerSecond / baseline.insertsPerSecond;
  console.error(`service: ${load.requestsPerSecond.toFixed(0)} requests/s, p99 ${load.p99Ms.toFixed(1)} ms, average batch ${averageBatch.toFixed(1)}, ratio ${ratio.toFixed(2)}`);

  writeResultsSection(
    "mongo",
    `## Ingest into MongoDB

\`node --import tsx bench/mongo-ingest.ts\`: ${machineLine()}, 2 cores shared by the load tool, the service and the database server. Server: ${server}. Both rows write the same document under the same write concern (\`w: "majority", j: true\`) into a traces collection with the same indexes.

| target | requests/s | p50 ms | p99 ms | average batch | ratio to baseline | non-2xx / errors |
| --- | --- | --- | --- | --- | --- | --- |
| baseline: back-to-back \`insertOne\`, one at a time (bench/insert-one-baseline.ts) | ${baseline.insertsPerSecond.toFixed(0)} | ${baseline.p50Ms.toFixed(2)} | ${baseline.p99Ms.toFixed(2)} | 1 | 1.00 | 0 |
| calltrace REST \`POST /v1/traces\`, MongoDB store (group commit, \`insertMany\`) | ${load.requestsPerSecond.toFixed(0)} | ${load.p50Ms.toFixed(2)} | ${load.p99Ms.toFixed(2)} | ${averageBatch.toFixed(1)} | ${ratio.toFixed(2)} | ${load.errors} |

${settings.connections} keep-alive connections, ${settings.warmupSeconds} s warm-up then ${settings.seconds} s measured (wrk -t1); the baseline ran ${settings.seconds} s. Every calltrace request is authenticated, rate-limited, validated and acknowledged only after its batch's journaled \`insertMany\`. Average batch: traces per \`insertMany\` over the service's whole run (warm-up included), from its "writer drained" log line. Peak RSS of the service ${peakRss.toFixed(0)} MiB; ${stored} traces stored.

Target: the service at least ${targetRatio}x the baseline's throughput: **${ratio >= targetRatio ? "met" : "not met"}** (${ratio.toFixed(2)}x).`,
  );
  if (ratio < targetRatio) process.exitCode = 1;
} finally {
  await mongo.close();
}
