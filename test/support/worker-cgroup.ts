import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Moves this worker into a new cgroup under its own (so a cgroup measuring a whole run still
 * counts it) and answers a reader of its CPU seconds; undefined where that is not allowed.
 */
function ownCgroup(): (() => number) | undefined {
  const mine = readFileSync("/proc/self/cgroup", "utf8").split("\n");
  const layouts: [string, RegExp, (dir: string) => number][] = [
    ["/sys/fs/cgroup/cpuacct", /^\d+:(?:[^:]*,)?cpuacct(?:,[^:]*)?:(.*)$/, (dir) => Number(readFileSync(join(dir, "cpuacct.usage"), "utf8")) / 1e9],
    ["/sys/fs/cgroup", /^0::(.*)$/, (dir) => Number(/usage_usec (\d+)/.exec(readFileSync(join(dir, "cpu.stat"), "utf8"))?.[1]) / 1e6],
  ];
  for (const [mount, line, read] of layouts) {
    const path = mine.map((entry) => line.exec(entry)?.[1]).find((found) => found !== undefined);
    if (path === undefined) continue;
    const parent = join(mount, path);
    // Only where that is a cgroup (a cgroup v1 machine has a tmpfs at /sys/fs/cgroup).
    if (!existsSync(join(parent, "cgroup.procs"))) continue;
    const dir = join(parent, `calltrace-test-${process.pid}`);
    try {
      mkdirSync(dir);
      writeFileSync(join(dir, "cgroup.procs"), String(process.pid));
      read(dir);
    } catch {
      try {
        rmdirSync(dir);
      } catch {}
      continue;
    }
    // Back to where it was, so the emptied cgroup can go.
    process.once("exit", () => {
      try {
        writeFileSync(join(parent, "cgroup.procs"), String(process.pid));
        rmdirSync(dir);
      } catch {}
    });
    return () => read(dir);
  }
  return undefined;
}

/**
 * This worker's CPU seconds and its descendants', exited or not, orphaned or not (a reader), when
 * CALLTRACE_TEST_CPU asks for figures and the machine allows a cgroup (root, cgroup v1's cpuacct
 * or cgroup v2). Made once per worker: this module is imported once, the setup file that reads it
 * runs again for each test file (test/support/cpu-record.ts).
 */
export const workerCgroupSeconds = process.env.CALLTRACE_TEST_CPU ? ownCgroup() : undefined;
