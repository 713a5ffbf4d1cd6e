// What tracing adds to each provider call: the same OpenAI client code, once
// from a copy of the openai package that init() patched and once from a copy
// it did not, in one process, against the tests' fake provider (in its own
// process, as is the stand-in calltrace service).
//
// - Wall time: calls alternate between the two copies one by one; the median
//   per-call times are compared. This is the latency the application sees.
// - CPU time: calls run in blocks of BLOCK that alternate between the copies;
//   process CPU per call (medians over blocks) is compared. This includes the
//   background sending of the traces, which mostly runs while the application
//   waits on the provider and so adds CPU rather than latency.
//
// Run: npm run bench (BENCH_CALLS sets the calls per copy and scenario).
import { fork } from "node:child_process";
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import { init, shutdown, stats } from "calltrace-sdk";

const CALLS = Number(process.env.BENCH_CALLS ?? 3000);
const WARMUP = 500;
const BLOCK = 50;
const require = createRequire(import.meta.url);
const messages = [{ role: "user", content: "Say hello" }];

type Client = { chat: { completions: { create(body: object): Promise<any> } } };
type Call = (client: Client) => Promise<void>;

const scenarios: Array<[string, Call]> = [
  ["chat.completions.create", async (client) => void (await client.chat.completions.create({ model: "gpt-4o", messages }))],
  [
    "chat.completions.create, streamed",
    async (client) => {
      const stream = await client.chat.completions.create({ model: "gpt-4o", messages, stream: true });
      for await (const _ of stream as AsyncIterable<unknown>);
    },
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

async function wallTimes(plain: Client, traced: Client, call: Call) {
  const times: [number[], number[]] = [[], []];
  for (let i = 0; i < WARMUP + CALLS; i++) {
    for (const side of i % 2 ? [0, 1] : [1, 0]) {
      const start = performance.now();
      await call(side ? traced : plain);
      if (i >= WARMUP) times[side]!.push(performance.now() - start);
    }
  }
  return { plain: median(times[0]), traced: median(times[1]) };
}

async function cpuTimes(plain: Client, traced: Client, call: Call) {
  const times: [number[], number[]] = [[], []];
  for (let block = 0; block < CALLS / BLOCK; block++) {
    for (const side of block % 2 ? [0, 1] : [1, 0]) {
      const start = process.cpuUsage();
      for (let i = 0; i < BLOCK; i++) await call(side ? traced : plain);
      const used = process.cpuUsage(start);
      times[side]!.push((used.user + used.system) / 1000 / BLOCK);
    }
  }
  return { plain: median(times[0]), traced: median(times[1]) };
}

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
  const options = { apiKey: "sk-fake", baseURL: `${provider.url}/v1`, maxRetries: 0 };
  const plain: Client = new plainOpenAI.OpenAI(options);
  const traced: Client = new (require("openai").OpenAI)(options);
  for (const [name, call] of scenarios) {
    const wall = await wallTimes(plain, traced, call);
    const cpu = await cpuTimes(plain, traced, call);
    const us = (ms: number) => (ms * 1000).toFixed(0);
    rows.push(
      `| ${name} | ${service} | ${wall.plain.toFixed(3)} | ${wall.traced.toFixed(3)} | **${us(wall.traced - wall.plain)}** | ${cpu.plain.toFixed(3)} | ${cpu.traced.toFixed(3)} | ${us(cpu.traced - cpu.plain)} |`,
    );
  }
  const { sent, failed, dropped, pending } = stats();
  rows.push(`| (traces: sent ${sent}, failed ${failed}, dropped ${dropped}, pending ${pending}) | ${service} | | | | | | |`);
  await shutdown(100);
}
provider.stop();
sink.stop();

console.log(
  `Node ${process.version}, ${CALLS} calls per copy and scenario after ${WARMUP} warm-up calls, ` +
    `CPU in blocks of ${BLOCK}; medians.\n`,
);
console.log(
  "| call | calltrace service | wall ms/call, unpatched | wall ms/call, patched | wall µs added | CPU ms/call, unpatched | CPU ms/call, patched | CPU µs added |",
);
console.log("|---|---|---|---|---|---|---|---|");
for (const row of rows) console.log(row);
