// The server's pricing of a spec-path trace (src/pricing/server-prices.ts), measured in process
// against what every REST trace costs anyway: JSON.parse of its body. `BENCH_ONLY=pricing npm run bench`.
import { loadavg } from "node:os";
import { priceCheck, serverCost } from "../src/pricing/server-prices.js";
import { machineLine, table, writeResultsSection } from "./support/results.js";

const body = JSON.stringify({
  provider: "anthropic",
  model: "claude-sonnet-4-5-20250929",
  tokens_in: 12_000,
  tokens_cached_in: 10_000,
  tokens_out: 900,
  latency_ms: 842,
  cost_usd: 0.0065,
  api_key: `ct_${"x".repeat(40)}`,
  status: "success",
});
const usage = { provider: "anthropic", model: "claude-sonnet-4-5-20250929", tokensIn: 12_000, tokensOut: 900, tokensCachedIn: 10_000 };
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const n = 200_000;

/** Nanoseconds per call of `fn`, the median of `rounds` timed runs of `n` calls. */
function nsPerCall(fn: (i: number) => unknown): number {
  let sink = 0;
  const runs: number[] = [];
  for (let r = 0; r <= rounds; r++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < n; i++) if (fn(i)) sink++;
    const ns = Number(process.hrtime.bigint() - started) / n;
    if (r > 0) runs.push(ns); // the first run warms up
  }
  if (sink < 0) console.log(sink);
  return runs.sort((a, b) => a - b)[Math.floor(runs.length / 2)]!;
}

const parse = nsPerCall(() => JSON.parse(body));
const seen = nsPerCall(() => priceCheck(0.0065, serverCost(usage)));
// A new model name every call: resolution runs each time (the memo holds 1024 names, then starts over).
const unseen = nsPerCall((i) => priceCheck(0.0065, serverCost({ ...usage, model: `claude-sonnet-4-5-2025${i % 5000}` })));

const fmt = (x: number) => x.toFixed(0);
writeResultsSection(
  "pricing",
  `## Server-side pricing per spec-path trace (\`BENCH_ONLY=pricing npm run bench\`, bench/pricing.ts)

${machineLine()}; ${n} calls per run, median of ${rounds} runs after one warm-up run, in process; load average ${loadavg()[0]!.toFixed(1)} on 2 cores (other work on the machine: compare the ratios, not the nanoseconds).

${table(
  ["operation", "ns per trace", "ratio to JSON.parse of the trace body"],
  [
    ["JSON.parse of a 250-byte trace body (baseline: every REST trace pays it)", fmt(parse), "1.00"],
    ["serverCost + priceCheck, model name seen before (memoised resolution)", fmt(seen), (seen / parse).toFixed(2)],
    ["serverCost + priceCheck, a new model name every call (resolution runs)", fmt(unseen), (unseen / parse).toFixed(2)],
  ],
)}

The REST path handles a trace in tens of microseconds (see the ingest section), so the server's own price and check, computed for every spec-path trace, cost well under 1 % of it for the model names traffic repeats.`,
);
console.log({ parse, seen, unseen });
