import { appendFileSync, readFileSync } from "node:fs";
import { relative } from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import { repoRoot } from "./cli.js";
import { workerCgroupSeconds } from "./worker-cgroup.js";

/**
 * With CALLTRACE_TEST_CPU=<file>, each test file appends one JSON line there: its wall time and the
 * CPU its worker process used, its own and its exited children's (services, browsers, FerretDB,
 * Python), from /proc. On a machine shared with other work, CPU says where a suite's cost is when
 * wall time cannot (bench/RESULTS.md, "Test suite"). Counted from this setup file's start, which
 * precedes the file's imports: a worker that runs several files (`isolate: false`) counts each
 * file's share, not the sum so far.
 *
 * /proc counts a child's CPU only when its parent reaps it, and chromium's renderers outlive the
 * browser process and are reaped by init: half of a browser file's CPU was missing. Where the
 * machine lets the worker have a cgroup of its own (test/support/worker-cgroup.ts), `cpu` is that
 * cgroup's usage instead, which counts every process the file started (`counted` says which).
 */
const target = process.env.CALLTRACE_TEST_CPU;

/** CPU seconds of this process and of its children that have exited: [own, children]. */
function cpuSeconds(): [number, number] {
  // Fields after the command name (which may hold spaces): utime is the 12th, then stime, cutime, cstime.
  const stat = readFileSync("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ").map(Number);
  const ticks = 100;
  return [(fields[11]! + fields[12]!) / ticks, (fields[13]! + fields[14]!) / ticks];
}

if (target) {
  let started = 0;
  const [ownBefore, childrenBefore] = cpuSeconds();
  const cgroupBefore = workerCgroupSeconds?.();
  beforeAll(() => {
    started = performance.now();
  });
  afterAll(() => {
    const [ownNow, childrenNow] = cpuSeconds();
    const own = Math.round((ownNow - ownBefore) * 100) / 100;
    const children = Math.round((childrenNow - childrenBefore) * 100) / 100;
    const inCgroup = workerCgroupSeconds && cgroupBefore !== undefined ? Math.round((workerCgroupSeconds() - cgroupBefore) * 100) / 100 : undefined;
    const file = relative(repoRoot, expect.getState().testPath ?? "");
    const line = {
      file,
      pid: process.pid,
      node: process.version,
      wall: Math.round(performance.now() - started) / 1000,
      // Since this setup file started: the file's imports are in it.
      cpu: inCgroup ?? Math.round((own + children) * 100) / 100,
      counted: inCgroup === undefined ? "proc" : "cgroup",
      own,
      children,
      uptime: Math.round(process.uptime() * 100) / 100,
    };
    appendFileSync(target, `${JSON.stringify(line)}\n`);
  });
}
