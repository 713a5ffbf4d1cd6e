import type { Redis } from "ioredis";
import type { Logger } from "../log/logger.js";

/** How often, at most, the degradation is logged. */
const logIntervalMs = 60_000;
/** How long after the last insured answer the limiters count as degraded. */
const degradedForMs = 5_000;

export interface RedisHealth {
  /** Called whenever an insurance limiter answered in Redis's place. */
  insuranceUsed(): void;
  /** Undefined while Redis answers; otherwise why the limiters are running in-process. */
  degradation(): string | undefined;
}

/** Watches the Redis connection and the insurance limiters: logs a degradation once a minute, reports it on /readyz. */
export function watchRedisHealth(redis: Redis, logger: Logger): RedisHealth {
  let lastInsured = 0;
  let lastLogged = 0;
  const degradation = () => {
    if (redis.status !== "ready") return `redis ${redis.status}: limits are counted in-process`;
    if (Date.now() - lastInsured < degradedForMs) return "redis slow: limits are counted in-process";
    return undefined;
  };
  const maybeLog = () => {
    const reason = degradation();
    if (!reason || Date.now() - lastLogged < logIntervalMs) return;
    lastLogged = Date.now();
    logger.warn({ reason }, "limits degraded");
  };
  redis.on("error", maybeLog);
  redis.on("close", maybeLog);
  redis.on("ready", () => {
    if (lastLogged > 0) logger.info("redis is back: limits are shared again");
    lastLogged = 0;
  });
  return {
    insuranceUsed() {
      lastInsured = Date.now();
      maybeLog();
    },
    degradation,
  };
}
