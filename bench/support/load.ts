import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses by status (wrk: non-2xx count only). */
  errors: number;
}

export interface LoadSettings {
  connections: number;
  seconds: number;
  /** 0: no warm-up (the target is warm already). */
  warmupSeconds: number;
}

/** Runs a load tool without blocking this process, so the servers' output pipes keep draining. */
function runTool(command: string, args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", reject);
    child.on("close", (status) => resolve({ status: status ?? 1, stdout, stderr }));
  });
}

function require(tool: string, install: string): void {
  if (spawnSync("sh", ["-c", `command -v ${tool}`]).status !== 0) throw new Error(`${tool} is not installed: ${install}`);
}

/**
 * HTTP/1.1 keep-alive load with wrk (one thread: the other core belongs to the server). Several
 * bodies are sent in turn, each request the next: wrk formats them all once, before the run, so
 * a request costs wrk a table look-up more than one fixed body does.
 */
export async function wrkPost(
  url: string,
  body: string | Uint8Array | (string | Uint8Array)[],
  headers: Record<string, string>,
  settings: LoadSettings,
): Promise<LoadResult> {
  require("wrk", "apt-get install -y wrk");
  const dir = mkdtempSync(join(tmpdir(), "calltrace-wrk-"));
  const script = join(dir, "post.lua");
  const headerLines = Object.entries(headers)
    .map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`)
    .join("\n");
  writeFileSync(script, `wrk.method = "POST"\n${headerLines}\n${Array.isArray(body) ? bodiesInTurn(body, join(dir, "bodies")) : `wrk.body = ${luaString(body)}`}\n`);
  const run = async (seconds: number) => {
    const result = await runTool("wrk", ["-t1", `-c${settings.connections}`, `-d${seconds}s`, "--latency", "-s", script, url]);
    if (result.status !== 0) throw new Error(`wrk failed: ${result.stderr}`);
    return result.stdout;
  };
  try {
    if (settings.warmupSeconds > 0) await run(settings.warmupSeconds);
    const out = await run(settings.seconds);
    const latency = (pct: string) => toMs(new RegExp(`^\\s*${pct}%\\s+([\\d.]+)(us|ms|s)`, "m").exec(out));
    return {
      requestsPerSecond: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0),
      p50Ms: latency("50"),
      p99Ms: latency("99"),
      errors: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0) + Number(/Socket errors:.*?timeout (\d+)/.exec(out)?.[1] ?? 0),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A body as a Lua string literal; a binary one (protobuf) as decimal escapes, one per byte. */
function luaString(body: string | Uint8Array): string {
  return typeof body === "string" ? JSON.stringify(body) : `"${Array.from(body, (b) => `\\${b}`).join("")}"`;
}

/** Lua that reads `bodies` (written to `file`, each as its length, a newline and its bytes) and sends them in turn. */
function bodiesInTurn(bodies: (string | Uint8Array)[], file: string): string {
  writeFileSync(file, Buffer.concat(bodies.flatMap((b) => { const bytes = Buffer.from(b); return [Buffer.from(`${bytes.length}\n`), bytes]; })));
  return `local requests = {}
local sent = 0
function init(args)
  local f = assert(io.open(${JSON.stringify(file)}, "rb"))
  local data = f:read("*a")
  f:close()
  local at = 1
  while at <= #data do
    local newline = string.find(data, "\\n", at, true)
    local length = tonumber(string.sub(data, at, newline - 1))
    requests[#requests + 1] = wrk.format(nil, nil, nil, string.sub(data, newline + 1, newline + length))
    at = newline + 1 + length
  end
end
function request()
  sent = sent % #requests + 1
  return requests[sent]
end`;
}

function toMs(match: RegExpExecArray | null): number {
  if (!match) return Number.NaN;
  const value = Number(match[1]);
  return match[2] === "us" ? value / 1000 : match[2] === "s" ? value * 1000 : value;
}

/** The `p`th percentile of ascending `sorted` values (NaN for none). */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

/**
 * How many calls a counted run makes (ghz's and h2load's): as many as the rate gives in
 * `settings.seconds`, the rate measured by a warm-up of `warmupSeconds` (at least 1 s when there
 * is no `lastRate` to go by).
 */
async function callsToMeasure(settings: LoadSettings, lastRate: number | undefined, warmUp: (seconds: number) => Promise<number>): Promise<number> {
  const rate = settings.warmupSeconds > 0 || lastRate === undefined ? await warmUp(Math.max(1, settings.warmupSeconds)) : lastRate;
  return Math.max(settings.connections, Math.round(rate * settings.seconds));
}

/**
 * gRPC unary load over h2c with ghz. The measured run is a number of calls sized from the
 * warm-up's rate, not a duration: at the end of a duration ghz closes its connections under the
 * calls still in flight, which it then counts as Unavailable, errors of the tool, not the server.
 */
export async function ghzIngest(
  target: string,
  data: GhzData,
  metadata: Record<string, string>,
  settings: LoadSettings,
  /** Calls per second measured before: sizes the run when there is no warm-up to measure it. */
  lastRate?: number,
): Promise<LoadResult> {
  require("ghz", "go install github.com/bojand/ghz/cmd/ghz@v0.120.0");
  const dir = mkdtempSync(join(tmpdir(), "calltrace-ghz-"));
  const messagesFile = join(dir, "messages");
  if ("messages" in data) writeFileSync(messagesFile, data.messages);
  const args = (length: string[]) => [
    "--insecure",
    "--proto",
    "proto/calltrace/v1/trace_service.proto",
    "-i",
    "proto,third_party/protovalidate,third_party/googleapis",
    "--call",
    "calltrace.v1.TraceService.Ingest",
    ...("json" in data ? ["-d", JSON.stringify(data.json)] : ["--binary-file", messagesFile]),
    "-m",
    JSON.stringify(metadata),
    "-c",
    String(settings.connections),
    // One HTTP/2 connection carrying every concurrent call, as a gRPC channel does (and ghz by
    // default); ten connections cost the service about 18 µs and ghz 8 µs more CPU per call,
    // each connection's reads and writes carrying fewer calls.
    "--connections",
    "1",
    // One core for the load tool, as wrk -t1: with two, Go's scheduler spins looking for work on
    // the core the service needs (ghz 59-61 against 52-54 µs of CPU per call).
    "--cpus",
    "1",
    // The data has no template in it: ghz would otherwise run it through Go's text/template for
    // every call, which cost it more CPU per call than the service spends (152 against 69 µs per
    // call measured with and without), on the 2 cores the service shares with it.
    "--disable-template-functions",
    "--disable-template-data",
    ...length,
    "--format",
    "json",
    target,
  ];
  const run = async (length: string[]) => {
    const result = await runTool("ghz", args(length));
    if (result.status !== 0 && !result.stdout) throw new Error(`ghz failed: ${result.stderr}`);
    return JSON.parse(result.stdout) as GhzReport;
  };
  try {
    const calls = await callsToMeasure(settings, lastRate, async (seconds) => (await run(["-z", `${seconds}s`])).rps);
    const report = await run(["-n", String(calls)]);
    const pct = (p: number) => (report.latencyDistribution.find((d) => d.percentage === p)?.latency ?? Number.NaN) / 1e6;
    const errors = Object.entries(report.statusCodeDistribution).reduce((n, [code, count]) => n + (code === "OK" ? 0 : count), 0);
    return { requestsPerSecond: report.rps, p50Ms: pct(50), p99Ms: pct(99), errors };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * What ghz sends: one message, as JSON, in every call; or several, size-delimited binary, which
 * ghz decodes once before the run and sends in turn, each call the next.
 */
export type GhzData = { json: unknown } | { messages: Uint8Array };

interface GhzReport {
  rps: number;
  latencyDistribution: { percentage: number; latency: number }[];
  statusCodeDistribution: Record<string, number>;
}

/**
 * gRPC unary load with h2load (nghttp2's load tool, in C like wrk): `settings.connections`
 * concurrent calls on one HTTP/2 connection and one thread, as ghz's run, each call `envelope`
 * (the request message in its gRPC envelope). h2load sees HTTP statuses only, and a failed gRPC
 * call is a 200 with its status in the trailers, so the calls answered OK are counted by the
 * server (`answeredOk`) around the measured run: every call not among them is an error. The
 * measured run is a number of calls sized from the warm-up's rate, as ghz's is; p50 and p99
 * come from h2load's per-request log.
 */
export async function h2loadGrpc(
  url: string,
  envelope: Uint8Array,
  headers: Record<string, string>,
  answeredOk: () => Promise<number>,
  settings: LoadSettings,
  /** Calls per second measured before: sizes the run when there is no warm-up to measure it. */
  lastRate?: number,
): Promise<LoadResult> {
  require("h2load", "apt-get install -y nghttp2-client");
  const dir = mkdtempSync(join(tmpdir(), "calltrace-h2load-"));
  const bodyFile = join(dir, "envelope");
  const logFile = join(dir, "log");
  writeFileSync(bodyFile, envelope);
  const run = async (length: string[]) => {
    rmSync(logFile, { force: true }); // h2load appends to its log: only this run's calls in it
    const args = ["-c", "1", "-m", String(settings.connections), "-t", "1", "-d", bodyFile, `--log-file=${logFile}`, ...length];
    for (const [name, value] of Object.entries({ "content-type": "application/grpc", te: "trailers", ...headers })) args.push("-H", `${name}: ${value}`);
    const result = await runTool("h2load", [...args, url]);
    if (result.status !== 0) throw new Error(`h2load failed: ${result.stderr || result.stdout}`);
    return result.stdout;
  };
  try {
    const calls = await callsToMeasure(settings, lastRate, async (seconds) => requestsPerSecond(await run(["-D", String(seconds)])));
    const okBefore = await answeredOk();
    const out = await run(["-n", String(calls)]);
    const ok = (await answeredOk()) - okBefore;
    const durations = readFileSync(logFile, "utf8")
      .trim()
      .split("\n")
      .map((line) => Number(line.split("\t")[2]) / 1000)
      .sort((a, b) => a - b);
    return { requestsPerSecond: requestsPerSecond(out), p50Ms: percentile(durations, 50), p99Ms: percentile(durations, 99), errors: calls - ok };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function requestsPerSecond(h2loadOutput: string): number {
  return Number(/finished in [\d.]+\w+, ([\d.]+) req\/s/.exec(h2loadOutput)?.[1] ?? 0);
}
