// Start-up of `calltrace serve`: from a source checkout (TypeScript through tsx, as before the
// package existed) and from the installed package (npm pack, npm install --omit=dev: compiled
// JavaScript). Time from spawning node to the first answered request, and peak RSS (VmHWM) then
// and after a burst of traces. `BENCH_ONLY=startup npm run bench`; writes its section of
// bench/RESULTS.md. BENCH_STARTS (default 7) starts per way, taken in turns.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../test/support/free-port.js";
import { packAndInstall } from "../test/support/packed-install.js";
import { traceBody } from "../test/support/test-service.js";
import { repoRoot } from "./support/processes.js";
import { machineLine, table, writeResultsSection } from "./support/results.js";

const starts = Number(process.env.BENCH_STARTS ?? 7);
const burst = 1000;

interface Start {
  ms: number;
  startRssMiB: number;
  burstRssMiB: number;
}

const peakRssMiB = (child: ChildProcess) => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1] ?? 0) / 1024;

/** One start of `node <bin> serve` on a fresh data directory; stopped after the burst. */
async function measure(bin: string, cwd: string): Promise<Start> {
  const dataDir = mkdtempSync(join(tmpdir(), "calltrace-startup-"));
  const port = await freePort();
  const plansFile = join(dataDir, "plans.json");
  writeFileSync(plansFile, JSON.stringify({ bench: { per_minute: 1_000_000, per_month: 1_000_000_000 } }));
  const env = { ...process.env, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: "warn", PLANS_FILE: plansFile };
  const key = execFileSync(process.execPath, [bin, "keys", "create", "--plan", "bench"], { cwd, env, encoding: "utf8" }).trim();
  const began = performance.now();
  const child = spawn(process.execPath, [bin, "serve"], { cwd, env, stdio: "ignore" });
  const url = `http://127.0.0.1:${port}`;
  try {
    return await startAndLoad(child, url, key, began);
  } finally {
    if (child.exitCode === null) {
      await new Promise((resolve) => {
        child.once("exit", resolve);
        child.kill("SIGTERM");
      });
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Waits for the first answered request, then sends the burst; the caller stops the server. */
async function startAndLoad(child: ChildProcess, url: string, key: string, began: number): Promise<Start> {
  for (;;) {
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (child.exitCode !== null) throw new Error(`calltrace serve exited ${child.exitCode}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  const ms = performance.now() - began;
  const startRssMiB = peakRssMiB(child);
  const body = JSON.stringify(traceBody(key));
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  for (let sent = 0; sent < burst; sent += 50) {
    const answers = await Promise.all(Array.from({ length: 50 }, () => fetch(`${url}/v1/traces`, { method: "POST", headers, body })));
    // 503 is the store's "try later" (D13), which a machine this loaded may answer: not a failure here.
    const refused = answers.find((a) => a.status !== 202 && a.status !== 503);
    if (refused) throw new Error(`a trace of the burst got ${refused.status}`);
  }
  return { ms, startRssMiB, burstRssMiB: peakRssMiB(child) };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

console.log("packing and installing the package …");
const installed = packAndInstall();
const ways = [
  { name: "source checkout (`npm start`: TypeScript through tsx)", bin: join(repoRoot, "bin/calltrace.js"), cwd: repoRoot },
  { name: "installed package (`npx calltrace serve`: compiled JavaScript)", bin: installed.bin, cwd: installed.app },
];
const results = new Map<string, Start[]>(ways.map((w) => [w.name, []]));
try {
  // One unmeasured start each: tsx's transform cache and the OS file cache are warm for both.
  for (const way of ways) await measure(way.bin, way.cwd);
  for (let i = 0; i < starts; i++) {
    for (const way of ways) {
      const start = await measure(way.bin, way.cwd);
      results.get(way.name)!.push(start);
      console.log(`${way.name}: ${start.ms.toFixed(0)} ms, ${start.startRssMiB.toFixed(1)} MiB, ${start.burstRssMiB.toFixed(1)} MiB`);
    }
  }
} finally {
  installed.remove();
}

const summary = ways.map((way) => {
  const runs = results.get(way.name)!;
  const ms = runs.map((r) => r.ms);
  return { name: way.name, ms: median(ms), fastest: Math.min(...ms), start: median(runs.map((r) => r.startRssMiB)), burst: median(runs.map((r) => r.burstRssMiB)) };
});
const [before, after] = summary as [(typeof summary)[0], (typeof summary)[0]];
const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
writeResultsSection(
  "startup",
  `## Start-up: source checkout vs installed package (\`BENCH_ONLY=startup npm run bench\`, bench/startup.ts)

${machineLine()}; load average at the end ${load} (${cpus().length} cores: on a loaded machine the times
vary 2-5x from start to start, the fastest start is the steadier figure; RSS hardly varies). Medians of ${starts}
starts each, taken in turns after one unmeasured start of each (tsx's transform cache warm). Time: from spawning \`node bin/calltrace.js serve\`
to the first answered \`GET /healthz\`. Peak RSS (VmHWM): at that moment, and after ${burst} traces
sent 50 at a time.

${table(
  ["way", "start-up, median (ms)", "start-up, fastest (ms)", "peak RSS at start (MiB)", `peak RSS after ${burst} traces (MiB)`],
  summary.map((s) => [s.name, s.ms.toFixed(0), s.fastest.toFixed(0), s.start.toFixed(1), s.burst.toFixed(1)]),
)}

The package starts in ${(after.ms / before.ms).toFixed(2)}x the time of the source checkout (fastest starts:
${(after.fastest / before.fastest).toFixed(2)}x), at ${(after.start / before.start).toFixed(2)}x
its peak RSS at start (${(after.burst / before.burst).toFixed(2)}x after the burst).`,
);
