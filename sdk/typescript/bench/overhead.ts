// What tracing adds to each provider call: the same OpenAI client code, once
// from a copy of the openai package that init() patched and once from a copy
// it did not, in one process, against the tests' fake provider (in its own
// process, as is the stand-in calltrace service).
//
// Calls run in pairs of blocks of BLOCK calls, one block per copy, back to
// back; the difference within each pair cancels machine load that drifts
// slower than a pair, and the median over pairs is reported with its
// interquartile range. Wall time is what the application waits for its calls
// (sending runs in the background, mostly while it waits on the provider).
// With the service up, a patched block then waits for flush(), so its CPU
// time includes delivering every trace it caused. With the service down,
// traces only queue (and are retried, then dropped).
//
// Run: npm run bench (BENCH_CALLS sets the calls per copy and scenario).
import { fork } from "node:child_process";
import { createRequire } from "node:module";
import { cpus, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { flush, init, shutdown, stats } from "calltrace-sdk";

const CALLS = Number(process.env.BENCH_CALLS ?? 3000);
const WARMUP = 500;
const BLOCK = 20;
const require = createRequire(import.meta.url);
const messages = [{ role: "user", content: "Say hello" }];

type Client = { chat: { completions: { create(body: object): Promise<any> } } };
type Call = (client: Client) => Promise<void>;

// The fake provider's chat completion, answered without any I/O: isolates the
// CPU that tracing adds from the noise of a network round trip.
const completion = JSON.stringify({
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1741570283,
  model: "gpt-4o-2024-08-06",
  choices: [{ index: 0, message: { role: "assistant", content: "Hello there!" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 19, completion_tokens: 10, total_tokens: 29 },
});
const cannedFetch = async () => new Response(completion, { headers: { "content-type": "application/json" } });

const scenarios: Array<[string, Call, object?]> = [
  [
    "chat.completions.create",
    async (client) => void (await client.chat.completions.create({ model: "gpt-4o", messages })),
  ],
  [
    "chat.completions.create, streamed",
    async (client) => {
      const stream = await client.chat.completions.create({ model: "gpt-4o", messages, stream: true });
      for await (const _ of stream as AsyncIterable<unknown>);
    },
  ],
  [
    "chat.completions.create, canned answer (no provider I/O)",
    async (client) => void (await client.chat.completions.create({ model: "gpt-4o", messages })),
    { fetch: cannedFetch },
  ],
];

/** A copy of the openai package of its own, with its own classes. */
function freshOpenAI(): any {
  for (const id of Object.keys(require.cache)) if (id.includes("/node_modules/openai/")) delete require.cache[id];
  return require("openai");
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function child(script: string): Promise<{ url: string; stop: () => void }> {
  const process = fork(script, { stdio: "ignore" });
  return new Promise((resolve) =>
    process.once("message", (m: any) => resolve({ url: m.url, stop: () => process.disconnect() })),
  );
}

/** Median and interquartile range. */
function spread(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { median: median(values), q1: at(0.25), q3: at(0.75) };
}

async function timeBlock(client: Client, call: Call, drain: boolean) {
  const startCpu = process.cpuUsage();
  const start = performance.now();
  for (let i = 0; i < BLOCK; i++) await call(client);
  const wall = (performance.now() - start) / BLOCK;
  if (drain) await flush(); // the block's CPU pays for delivering all of its traces
  const used = process.cpuUsage(startCpu);
  return { wall, cpu: (used.user + used.system) / 1000 / BLOCK };
}

// Each pair runs a block on each copy back to back (in alternating order);
// the per-pair differences cancel load that drifts slower than a pair.
async function measure(plain: Client, traced: Client, call: Call, drain: boolean) {
  const samples = { plainWall: [] as number[], tracedWall: [] as number[], wall: [] as number[], cpu: [] as number[] };
  for (let pair = 0; pair < (WARMUP + CALLS) / BLOCK; pair++) {
    const first = await timeBlock(pair % 2 ? plain : traced, call, drain && pair % 2 === 0);
    const second = await timeBlock(pair % 2 ? traced : plain, call, drain && pair % 2 === 1);
    if (pair * BLOCK < WARMUP) continue;
    const [p, t] = pair % 2 ? [first, second] : [second, first];
    samples.plainWall.push(p.wall);
    samples.tracedWall.push(t.wall);
    samples.wall.push(t.wall - p.wall);
    samples.cpu.push(t.cpu - p.cpu);
  }
  return {
    plain: median(samples.plainWall),
    traced: median(samples.tracedWall),
    wall: spread(samples.wall),
    cpu: spread(samples.cpu),
  };
}

const loadBefore = loadavg()[0]!.toFixed(1);
const provider = await child("bench/.out/fake-provider-process.mjs");
const sink = await child("bench/calltrace-sink.mjs");
const plainOpenAI = freshOpenAI(); // loaded before init(): never patched
const rows: string[] = [];
for (const [service, endpoint] of [
  ["up", sink.url],
  ["down", "http://127.0.0.1:9/v1/traces"], // nothing listens on the discard port
]) {
  freshOpenAI(); // the copy init() patches
  await init({ apiKey: "ct_bench", endpoint, onWarning: () => {} });
  const tracedOpenAI = require("openai");
  for (const [name, call, clientOptions] of scenarios) {
    const options = { apiKey: "sk-fake", baseURL: `${provider.url}/v1`, maxRetries: 0, ...clientOptions };
    const plain: Client = new plainOpenAI.OpenAI(options);
    const traced: Client = new tracedOpenAI.OpenAI(options);
    const m = await measure(plain, traced, call, service === "up");
    const us = (ms: number) => (ms * 1000).toFixed(0);
    const added = (d: { median: number; q1: number; q3: number }) => `**${us(d.median)}** (${us(d.q1)} to ${us(d.q3)})`;
    rows.push(
      `| ${name} | ${service} | ${m.plain.toFixed(3)} | ${m.traced.toFixed(3)} | ${added(m.wall)} | ${added(m.cpu)} |`,
    );
  }
  const { sent, failed, dropped, pending } = stats();
  rows.push(
    `| (traces: sent ${sent}, failed ${failed}, dropped ${dropped}, pending ${pending}) | ${service} | | | | |`,
  );
  await shutdown(100);
}
provider.stop();
sink.stop();

console.log(
  `Node ${process.version} on ${cpus().length} cores (load average ${loadBefore} before, ${loadavg()[0]!.toFixed(1)} after: ` +
    `other work on the machine widens the ranges). ${CALLS} calls per copy and scenario after ${WARMUP} warm-up calls, ` +
    `in pairs of blocks of ${BLOCK} (one block per copy). Added time: median over pairs of ` +
    `(patched block − unpatched block) per call, with the interquartile range.\n`,
);
console.log(
  "| call | calltrace service | ms/call unpatched (median) | ms/call patched (median) | wall µs added per call | process CPU µs added per call |",
);
console.log("|---|---|---|---|---|---|");
for (const row of rows) console.log(row);
