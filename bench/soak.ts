// Soak test: mixed valid and invalid traffic over REST and gRPC against `calltrace serve` for a
// while (default 10 minutes), reporting throughput, answers by status and the server's RSS at
// every interval; at the end, memory must show no growth trend and every trace answered 202 (or
// gRPC OK) must be in the store, and nothing else.
//
//   npm run soak                       10 minutes, report every minute
//   npm run soak -- --minutes 2        shorter
//   npm run soak -- --record           also write the result into bench/RESULTS.md (soak section)
//
// Loopback only; bounded in time; the server is a child process on a fresh data directory.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { TraceService } from "../gen/calltrace/v1/trace_service_pb.js";
import { openSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { calltrace, compiledService, startListening } from "./support/processes.js";
import { machineLine, table, writeResultsSection } from "./support/results.js";

const { values } = parseArgs({
  options: {
    minutes: { type: "string", default: process.env.SOAK_MINUTES ?? "10" },
    "interval-seconds": { type: "string" },
    "rest-concurrency": { type: "string", default: "12" },
    "grpc-concurrency": { type: "string", default: "6" },
    record: { type: "boolean", default: false },
  },
});
const durationMs = Number(values.minutes) * 60_000;
const intervalMs = values["interval-seconds"]
  ? Number(values["interval-seconds"]) * 1000
  : Math.min(60_000, Math.max(5_000, durationMs / 10));
if (!(durationMs > 0) || !(intervalMs > 0)) throw new Error("--minutes and --interval-seconds must be positive");

const dataDir = mkdtempSync(join(tmpdir(), "calltrace-soak-"));
const plansFile = join(dataDir, "plans.json");
writeFileSync(plansFile, JSON.stringify({ soak: { per_minute: 1_000_000_000, per_month: 1_000_000_000 } }));
const env = { DATA_DIR: dataDir, PLANS_FILE: plansFile, LOG_LEVEL: "info" }; // info: startListening waits for the "listening" line
const key = calltrace(["keys", "create", "--plan", "soak", "--name", "soak"], env);
const server = await startListening(compiledService("serve", "--port", "0"), env);
const url = `http://127.0.0.1:${server.port}`;
const rssMiB = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.child.pid}/status`, "utf8"))?.[1] ?? 0) / 1024;

/** Every request's number is its trace's tokens_in, so the store tells which ones it kept. */
let next = 0;
const accepted = new Set<number>();
const statuses = new Map<string, number>();
let failures = 0;
const count = (label: string) => statuses.set(label, (statuses.get(label) ?? 0) + 1);

const trace = (n: number) => ({
  provider: ["openai", "anthropic", "gemini"][n % 3],
  model: `soak-model-${n % 17}`,
  tokens_in: n,
  tokens_out: n % 1000,
  latency_ms: n % 5000,
  cost_usd: (n % 100) / 1000,
  api_key: key,
  status: n % 10 === 0 ? "error" : "success",
  ...(n % 10 === 0 ? { error: "upstream 529" } : {}),
});

/** One REST request: mostly valid, with a steady share of each kind of invalid one. */
async function restRequest(n: number): Promise<void> {
  const kind = n % 20;
  let headers: Record<string, string> = { "content-type": "application/json", authorization: `Bearer ${key}` };
  let body: string = JSON.stringify(trace(n));
  if (kind === 1)
    body = JSON.stringify({ ...trace(n), provider: "cohere", tokens_in: -1 }); // 400
  else if (kind === 2)
    body = "{not json"; // 400
  else if (kind === 3)
    headers = { ...headers, authorization: "Bearer ct_not-a-real-key-0000000000000000" }; // 401 (then 429 per address)
  else if (kind === 4)
    body = JSON.stringify({ ...trace(n), model: "m".repeat(70_000) }); // 413
  else if (kind === 5) headers = { ...headers, "content-type": "text/plain" }; // 415
  try {
    const response = await fetch(`${url}/v1/traces`, { method: "POST", headers, body, signal: AbortSignal.timeout(30_000) });
    await response.arrayBuffer();
    count(`rest ${response.status}`);
    if (response.status === 202) {
      if (kind >= 1 && kind <= 5) throw new Error(`invalid request ${n} (kind ${kind}) was accepted`);
      accepted.add(n);
    }
  } catch (error) {
    if ((error as Error).message.includes("was accepted")) throw error;
    failures++;
    count("rest failed");
  }
}

const grpc = createClient(TraceService, createGrpcTransport({ baseUrl: url }));

async function grpcRequest(n: number): Promise<void> {
  const t = trace(n);
  const valid = {
    provider: t.provider!,
    model: t.model,
    tokensIn: n,
    tokensOut: t.tokens_out,
    latencyMs: t.latency_ms,
    costUsd: t.cost_usd,
    apiKey: key,
    status: t.status,
    ...(t.error ? { error: t.error } : {}),
  };
  const kind = n % 10;
  const request = kind === 1 ? { ...valid, provider: "nope" } : kind === 2 ? { ...valid, apiKey: "ct_other" } : valid;
  const authorization = kind === 3 ? "Bearer ct_not-a-real-key-0000000000000000" : `Bearer ${key}`;
  try {
    await grpc.ingest({ trace: request }, { headers: { authorization }, timeoutMs: 30_000 });
    count("grpc ok");
    if (kind >= 1 && kind <= 3) throw new Error(`invalid gRPC request ${n} was accepted`);
    accepted.add(n);
  } catch (error) {
    if ((error as Error).message?.includes("was accepted")) throw error;
    const code = ConnectError.from(error).code;
    count(`grpc ${Code[code]}`);
    if (code !== Code.InvalidArgument && code !== Code.Unauthenticated && code !== Code.ResourceExhausted) failures++;
  }
}

const started = Date.now();
const deadline = started + durationMs;
const samples: { minute: number; rss: number; requests: number }[] = [];
let lastTotal = 0;
const total = () => [...statuses.values()].reduce((a, b) => a + b, 0);
console.log(`soak: ${values.minutes} min against ${url}, report every ${intervalMs / 1000} s`);
console.log("elapsed  req/s   RSS MiB  statuses so far");
const reporter = setInterval(() => {
  const elapsed = (Date.now() - started) / 60_000;
  const done = total();
  const rate = (done - lastTotal) / (intervalMs / 1000);
  lastTotal = done;
  const rss = rssMiB();
  samples.push({ minute: elapsed, rss, requests: done });
  const summary = [...statuses]
    .sort()
    .map(([k, v]) => `${k}: ${v}`)
    .join(", ");
  console.log(`${elapsed.toFixed(1).padStart(5)} min ${rate.toFixed(0).padStart(6)} ${rss.toFixed(1).padStart(9)}  ${summary}`);
}, intervalMs);

const loop = (send: (n: number) => Promise<void>) => async () => {
  while (Date.now() < deadline) await send(next++);
};
await Promise.all([
  ...Array.from({ length: Number(values["rest-concurrency"]) }, loop(restRequest)),
  ...Array.from({ length: Number(values["grpc-concurrency"]) }, loop(grpcRequest)),
]);
clearInterval(reporter);
await server.stop(); // SIGTERM: answers what is in flight, commits the queue, closes the store

// Every accepted trace is stored, and nothing else.
const store = openSqliteStore(dataDir);
const stored = new Set<number>();
let duplicates = 0;
for await (const t of store.exportTraces({})) {
  if (stored.has(t.tokensIn)) duplicates++;
  stored.add(t.tokensIn);
}
await store.close();
const missing = [...accepted].filter((n) => !stored.has(n));
const unexpected = [...stored].filter((n) => !accepted.has(n));

// Memory: least-squares slope of RSS over time, after the first fifth of the run (warm-up).
const steady = samples.filter((s) => s.minute >= (durationMs / 60_000) * 0.2);
const slope = (() => {
  if (steady.length < 3) return 0;
  const mx = steady.reduce((a, s) => a + s.minute, 0) / steady.length;
  const my = steady.reduce((a, s) => a + s.rss, 0) / steady.length;
  const num = steady.reduce((a, s) => a + (s.minute - mx) * (s.rss - my), 0);
  const den = steady.reduce((a, s) => a + (s.minute - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
})();
const span = steady.length >= 2 ? steady.at(-1)!.minute - steady[0]!.minute : 0;
const trendMiB = slope * span;
const meanRss = steady.reduce((a, s) => a + s.rss, 0) / Math.max(1, steady.length);
// Flat: the fitted growth over the steady part is under 16 MiB or 10 % of the mean, whichever is larger.
const flat = trendMiB < Math.max(16, meanRss * 0.1);
const seconds = (Date.now() - started) / 1000;
const ok = missing.length === 0 && unexpected.length === 0 && duplicates === 0 && flat && failures === 0;

const lines = [
  `Soak (${machineLine()}, 2 shared cores): ${values.minutes} min, ${values["rest-concurrency"]} REST + ${values["grpc-concurrency"]} gRPC senders, a fixed share of invalid requests (bad body, bad JSON, unknown key, oversized, wrong content type, key mismatch).`,
  "",
  table(
    ["minute", "requests so far", "server RSS MiB"],
    samples.map((s) => [s.minute.toFixed(1), s.requests, s.rss.toFixed(1)]),
  ),
  "",
  table(
    ["answer", "count"],
    [...statuses].sort().map(([k, v]) => [k, v]),
  ),
  "",
  `Throughput ${(total() / seconds).toFixed(0)} requests/s overall; ${accepted.size} traces accepted, ${stored.size} stored, ${missing.length} missing, ${unexpected.length} stored without a 202, ${duplicates} duplicates; ${failures} transport failures.`,
  `RSS trend after warm-up: ${slope >= 0 ? "+" : ""}${slope.toFixed(2)} MiB/min (${trendMiB.toFixed(1)} MiB over ${span.toFixed(1)} min, mean ${meanRss.toFixed(1)} MiB): ${flat ? "flat" : "GROWING"}.`,
  `Result: ${ok ? "PASS" : "FAIL"}.`,
];
console.log(`\n${lines.join("\n")}`);
if (values.record) writeResultsSection("soak", `## Soak\n\n\`npm run soak\` (bench/soak.ts).\n\n${lines.join("\n")}`);
rmSync(dataDir, { recursive: true, force: true });
process.exitCode = ok ? 0 : 1;
