import cluster from "node:cluster";
import { once } from "node:events";
import { Redis } from "ioredis";
import type { Config } from "../config/config.js";
import type { Logger } from "../log/logger.js";
import type { Metrics } from "../observability/metrics.js";
import type { TraceReader } from "../store/trace-reader.js";
import { createAuthFailureLimiter, type AuthFailureLimiter } from "./auth-failure-limiter.js";
import { clusterBackend, memoryBackend, redisBackend } from "./limiter-backend.js";
import { storedTraceCount } from "./stored-trace-count.js";
import { createMonthlyQuota, type MonthlyQuota } from "./monthly-quota.js";
import { createPerMinuteLimiter } from "./per-minute-limiter.js";
import type { RateLimiter } from "./rate-limiter.js";
import { watchRedisHealth } from "./redis-health.js";

export interface Limits {
  limiter: RateLimiter;
  authFailures: AuthFailureLimiter;
  quota: MonthlyQuota;
  /** Undefined while the limits are shared as configured; otherwise why they are not (for /readyz). */
  degradation(): string | undefined;
  /** Resolves once Redis is connected, or after timeoutMs (then the insurance limiters count until it is). */
  connected(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * The limits of the configured backend: Redis when REDIS_URL is set (shared by every instance,
 * insured by in-process limiters), the cluster primary's counters in a worker of
 * `serve --workers N`, in-process otherwise. Monthly counters are seeded from the
 * traces already stored, so they survive restarts in either mode.
 */
export function openLimits(
  config: Pick<Config, "redisUrl" | "redisTimeoutMs" | "writeTimeoutMs">,
  store: Pick<TraceReader, "usageTotals" | "monthlyTraceCount">,
  logger: Logger,
  { now, metrics }: { now?: () => number; metrics?: Pick<Metrics, "quotaGiveBackLost"> } = {},
): Limits {
  let redis: Redis | undefined;
  let degradation = (): string | undefined => undefined;
  // A worker of `serve --workers N` shares its counters with the other workers through the primary.
  let backend = cluster.isWorker ? clusterBackend(logger) : memoryBackend();
  if (config.redisUrl !== undefined) {
    // No offline queue and one attempt per command: a command Redis cannot take fails at once
    // and the insurance limiter answers; ioredis keeps reconnecting in the background. The
    // commands of a tick leave in one write and one round trip (oneWritePerTick, in redisBackend).
    redis = new Redis(config.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000 });
    const health = watchRedisHealth(redis, logger);
    degradation = health.degradation;
    backend = redisBackend({ redis, timeoutMs: config.redisTimeoutMs, health });
  }
  const countStored = storedTraceCount(store);
  return {
    limiter: createPerMinuteLimiter(backend),
    authFailures: createAuthFailureLimiter(backend),
    // A count that takes longer than a write may is answered as a store that cannot take the write.
    quota: createMonthlyQuota({
      backend,
      countStored,
      countTimeoutMs: config.writeTimeoutMs,
      giveBackLost: giveBackLostLog(logger, metrics),
      ...(now ? { now } : {}),
    }),
    degradation: () => degradation(),
    async connected(timeoutMs) {
      if (!redis || redis.status === "ready") return;
      let timer: NodeJS.Timeout | undefined;
      // A connection error ends the wait too: Redis is down, so serve on the insurance limiters.
      await Promise.race([once(redis, "ready").catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
    },
    async close() {
      redis?.disconnect();
    },
  };
}

/** How often, at most, lost give-backs are logged (each is counted in /metrics). */
const lostLogIntervalMs = 60_000;

/**
 * Logs the quota's lost give-backs (by key id, never the key), at most once a minute with how many
 * were lost since: an outage loses one per refused or duplicate trace, which must not flood the log.
 */
function giveBackLostLog(logger: Logger, metrics: Pick<Metrics, "quotaGiveBackLost"> | undefined) {
  let lastLogged = Number.NEGATIVE_INFINITY;
  let unlogged = 0;
  return (keyId: string, traces: number, error: unknown) => {
    metrics?.quotaGiveBackLost(traces);
    unlogged += traces;
    if (Date.now() - lastLogged < lostLogIntervalMs) return;
    lastLogged = Date.now();
    logger.warn(
      { keyId, traces: unlogged, err: error },
      "monthly quota: traces not given back (Redis did not take them back, or their commit's outcome is unknown): the month counts them",
    );
    unlogged = 0;
  };
}
