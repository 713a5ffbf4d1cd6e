import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { attributedStoredTrace, seededRandom } from "./attributed-traffic.js";
import { bulkSeed, type SeedRate } from "./bulk-seed.js";

export const repoRoot = fileURLToPath(new URL("../..", import.meta.url));

export interface BenchProcess {
  port: number;
  child: ChildProcess;
  /** Peak resident set size so far, in MiB (VmHWM). */
  peakRssMiB(): number;
  stop(): Promise<void>;
}

/** Starts a Node process that prints a JSON "listening" line with its port, and waits for it. */
export async function startListening(args: string[], env: NodeJS.ProcessEnv = {}): Promise<BenchProcess> {
  const child = spawn(process.execPath, args, { cwd: repoRoot, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<number>((resolve, reject) => {
    let buffered = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      for (const line of buffered.split("\n")) {
        const match = /"msg":"listening".*?"port":(\d+)|"port":(\d+).*?"msg":"listening"/.exec(line);
        if (match) resolve(Number(match[1] ?? match[2]));
      }
    });
    child.on("exit", (code) => reject(new Error(`${args.join(" ")} exited ${code} before listening`)));
  });
  child.stdout!.resume();
  return {
    port,
    child,
    peakRssMiB: () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1] ?? 0) / 1024,
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

/** CPU seconds a process (`/proc/PID/stat`) or one of its threads (`/proc/PID/task/TID/stat`) has used so far: utime + stime. */
function cpuSecondsOf(statFile: string): number {
  const stat = readFileSync(statFile, "utf8");
  // The fields after the command name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100; // clock ticks (USER_HZ is 100 on Linux)
}

/** CPU seconds a process has used so far, all its threads. */
export function cpuSeconds(pid: number): number {
  return cpuSecondsOf(`/proc/${pid}/stat`);
}

/** CPU seconds each thread of a process has used so far, by thread id (the main thread's is the process id). */
export function threadCpuSeconds(pid: number): Map<number, number> {
  return new Map(readdirSync(`/proc/${pid}/task`).map((tid) => [Number(tid), cpuSecondsOf(`/proc/${pid}/task/${tid}/stat`)]));
}

/**
 * Waits until the processes are idle: together under `busyShare` of a core over `windowMs`, so
 * that one target's leftovers (its writer thread finishing, a WAL checkpoint, garbage collection)
 * are not measured against the next. Answers how long it waited, in ms; gives up after maxMs.
 */
export async function waitUntilIdle(pids: number[], { windowMs = 500, busyShare = 0.03, maxMs = 30_000 } = {}): Promise<number> {
  const started = performance.now();
  const total = () => pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
  for (let before = total(); performance.now() - started < maxMs; ) {
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    const after = total();
    if (after - before < (busyShare * windowMs) / 1000) return performance.now() - started;
    before = after;
  }
  return performance.now() - started;
}

/**
 * The service as users run it: the compiled JavaScript of the installed package (dist/), not the
 * TypeScript sources through tsx, whose transform keeps function names with a defineProperty per
 * closure created. Built once per `npm run bench` (bench/run.ts sets CALLTRACE_BENCH_BUILT), or by
 * a benchmark run on its own; answers the arguments that start it.
 */
export function compiledService(...args: string[]): string[] {
  if (process.env.CALLTRACE_BENCH_BUILT !== "1") {
    const built = spawnSync(process.execPath, ["scripts/build.mjs"], { cwd: repoRoot, stdio: ["ignore", "ignore", "inherit"] });
    if (built.status !== 0) throw new Error(`npm run build exited ${built.status ?? built.signal}`);
    process.env.CALLTRACE_BENCH_BUILT = "1";
  }
  return ["dist/src/cli/main.js", ...args];
}

/**
 * How many traces the store holds: `calltrace traces export`'s lines, counted as they stream. A
 * run stores over a million, more JSONL than one string can hold.
 */
export function storedTraceCount(env: NodeJS.ProcessEnv = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, compiledService("traces", "export"), {
      cwd: repoRoot,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let lines = 0;
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) lines++;
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(lines) : reject(new Error(`calltrace traces export exited ${code}: ${stderr}`))));
  });
}

/** Runs the calltrace CLI and returns its stdout. */
export function calltrace(args: string[], env: NodeJS.ProcessEnv = {}): string {
  const result = spawnSync(process.execPath, compiledService(...args), {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    encoding: "utf8",
    maxBuffer: 1 << 30,
  });
  if (result.status !== 0) throw new Error(`calltrace ${args.join(" ")}: ${result.stderr}`);
  return result.stdout.trim();
}

/** Settings of the ingest benchmarks' load: BENCH_SECONDS per turn, BENCH_WARMUP_SECONDS first, BENCH_ROUNDS rounds. */
export function loadSettings(connections = 50) {
  return {
    rounds: Number(process.env.BENCH_ROUNDS ?? 3),
    settings: {
      connections,
      seconds: Number(process.env.BENCH_SECONDS ?? 6),
      warmupSeconds: Number(process.env.BENCH_WARMUP_SECONDS ?? 3),
    },
  };
}

/** Traces already in the store each ingest benchmark loads (BENCH_SEED_TRACES), as a store in use holds them. */
const seededTraces = Number(process.env.BENCH_SEED_TRACES ?? 1_000_000);

/**
 * A fresh embedded store with a key on a plan whose limits never throttle the run, so every
 * request takes the accepted path (D19), holding `seededTraces` attributed traces of the key's
 * project over the last 30 days: its directory, the environment that points calltrace at it,
 * and the key. A copy of one seeded store (seededStore), seeded once per `npm run bench`.
 */
export function benchStore(): { dataDir: string; env: NodeJS.ProcessEnv; key: string } {
  const seeded = seededStore();
  const dataDir = mkdtempSync(join(tmpdir(), "calltrace-bench-"));
  copyFileSync(join(seeded.dataDir, "calltrace.db"), join(dataDir, "calltrace.db"));
  return { dataDir, ...storeSettings(dataDir), key: seeded.key };
}

/** The plans file (written into `dataDir`) and the environment of a bench store. */
function storeSettings(dataDir: string): { env: NodeJS.ProcessEnv } {
  const plansFile = join(dataDir, "plans.json");
  writeFileSync(plansFile, JSON.stringify({ bench: { per_minute: 1_000_000_000, per_month: 1_000_000_000 } }));
  return { env: { DATA_DIR: dataDir, PLANS_FILE: plansFile, LOG_LEVEL: "info" } };
}

/**
 * The seeded store every benchStore copies: made on first use, through the store's bulk path
 * (bench/support/bulk-seed.ts), and kept for the benchmarks after (bench/run.ts sets
 * CALLTRACE_BENCH_SEEDED to its directory, and removes it at the end). Its seeding rate is kept
 * beside it, for the benchmarks to report.
 */
export function seededStore(): { dataDir: string; key: string; seeding: SeedRate } {
  const existing = process.env.CALLTRACE_BENCH_SEEDED;
  if (existing && existsSync(join(existing, "seeded.json"))) return { dataDir: existing, ...JSON.parse(readFileSync(join(existing, "seeded.json"), "utf8")) };
  const dataDir = mkdtempSync(join(tmpdir(), "calltrace-bench-seeded-"));
  const { env } = storeSettings(dataDir);
  const key = calltrace(["keys", "create", "--plan", "bench"], env);
  const [created] = JSON.parse(calltrace(["keys", "list", "--json"], env)) as { id: string; project: string }[];
  const rand = seededRandom(27);
  const start = Date.now() - 30 * dayMs;
  const step = (30 * dayMs - 60_000) / seededTraces;
  const owner = { accountId: created!.project, keyId: created!.id };
  const seeding = bulkSeed(dataDir, seededTraces, (i) => ({ trace: attributedStoredTrace(rand, owner, Math.floor(start + i * step)), idempotencyKey: undefined }), (line) =>
    console.error(`[bench seed] ${line}`),
  );
  writeFileSync(join(dataDir, "seeded.json"), JSON.stringify({ key, seeding }));
  process.env.CALLTRACE_BENCH_SEEDED = dataDir;
  return { dataDir, key, seeding };
}

const dayMs = 86_400_000;
