import { readFileSync } from "node:fs";

/**
 * The calling thread's CPU time so far in nanoseconds, as the scheduler counts it
 * (/proc/thread-self/schedstat, Linux): per thread, unlike process.cpuUsage(), and finer than the
 * clock ticks of /proc/…/stat, so a part of a commit can be timed alone on a shared machine.
 */
export function threadCpuNs(): number {
  return Number(readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[0]);
}
