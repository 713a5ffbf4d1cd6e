import { appendFileSync, readFileSync } from "node:fs";
import { relative } from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import { repoRoot } from "./cli.js";

/**
 * With CALLTRACE_TEST_CPU=<file>, each test file appends one JSON line there: its wall time and the
 * CPU its worker process used, its own and its exited children's (services, browsers, FerretDB,
 * Python), from /proc. On a machine shared with other work, CPU says where a suite's cost is when
 * wall time cannot (bench/RESULTS.md, "Test suite"). Counted from this setup file's start, which
 * precedes the file's imports: a worker that runs several files (`isolate: false`) counts each
 * file's share, not the sum so far.
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
  beforeAll(() => {
    started = performance.now();
  });
  afterAll(() => {
    const [ownNow, childrenNow] = cpuSeconds();
    const own = Math.round((ownNow - ownBefore) * 100) / 100;
    const children = Math.round((childrenNow - childrenBefore) * 100) / 100;
    const file = relative(repoRoot, expect.getState().testPath ?? "");
    const line = {
      file,
      pid: process.pid,
      node: process.version,
      wall: Math.round(performance.now() - started) / 1000,
      // Since this setup file started: the file's imports are in it.
      cpu: Math.round((own + children) * 100) / 100,
      own,
      children,
      uptime: Math.round(process.uptime() * 100) / 100,
    };
    appendFileSync(target, `${JSON.stringify(line)}\n`);
  });
}
