import cluster, { type Worker } from "node:cluster";
import { RateLimiterClusterMaster } from "rate-limiter-flexible";
import type { Config } from "../config/config.js";
import { serveWorkerCounters } from "./cluster-counters.js";
import type { Logger } from "../log/logger.js";

/** A worker that dies within this long of starting is not restarted (it would only crash again). */
const crashLoopMs = 2000;

/**
 * The primary of `calltrace serve --workers N`: forks N workers that share the listening port
 * (each runs the whole service), restarts one that dies, and on SIGTERM or SIGINT passes the
 * signal on and exits when they all have. Without Redis it also holds the workers' shared
 * limiter counters (rate-limiter-flexible's cluster master) and monthly quota counters, so N
 * workers together admit exactly a plan's limits.
 */
export function runClusterPrimary(config: Pick<Config, "workers" | "redisUrl" | "shutdownGraceMs">, logger: Logger): void {
  if (config.redisUrl === undefined) {
    new RateLimiterClusterMaster();
    serveWorkerCounters();
  }
  let stopping = false;
  const startedAt = new Map<Worker, number>();
  const fork = () => startedAt.set(cluster.fork(), Date.now());
  for (let i = 0; i < config.workers; i++) fork();

  cluster.on("exit", (worker, code, signal) => {
    const started = startedAt.get(worker) ?? 0;
    startedAt.delete(worker);
    if (stopping) {
      if (startedAt.size === 0) {
        logger.info("all workers stopped");
        process.exit(0);
      }
      return;
    }
    // `pid` is the primary's own, on every line: the worker's is `workerPid`.
    logger.error({ workerPid: worker.process.pid, code, signal }, "worker died");
    if (Date.now() - started > crashLoopMs) fork();
    else if (startedAt.size === 0) process.exit(1);
  });

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, workers: startedAt.size }, "stopping workers");
    for (const worker of startedAt.keys()) worker.process.kill(signal);
    setTimeout(() => process.exit(1), config.shutdownGraceMs + 2000).unref();
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}
