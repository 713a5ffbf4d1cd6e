import type { Redis } from "ioredis";
import { RateLimiterCluster, RateLimiterMemory, RateLimiterRedis, RLWrapperTimeouts, type RateLimiterAbstract } from "rate-limiter-flexible";
import type { RedisHealth } from "./redis-health.js";

/** Where counters live: this process, or a Redis shared by every instance. */
export interface LimiterBackend {
  /** A rate-limiter-flexible limiter of `points` per `duration` seconds, its keys under `keyPrefix`. */
  limiter(options: { keyPrefix: string; points: number; duration: number }): RateLimiterAbstract | RLWrapperTimeouts;
}

export function memoryBackend(): LimiterBackend {
  return { limiter: (options) => new RateLimiterMemory(options) };
}

/** Counters held by the primary of `serve --workers N` (its RateLimiterClusterMaster), shared by every worker. */
export function clusterBackend(): LimiterBackend {
  return { limiter: (options) => new RateLimiterCluster({ ...options, timeoutMs: 1000 }) };
}

export interface RedisBackendOptions {
  redis: Redis;
  /** Longest a Redis call may take before the in-process insurance limiter answers instead. */
  timeoutMs: number;
  health: RedisHealth;
}

/**
 * Counters in Redis, so every instance shares them. Each limiter is insured: when Redis is
 * unreachable or slower than timeoutMs, an in-process limiter with the same limits answers,
 * so requests keep being served (each instance then counts on its own until Redis is back).
 */
export function redisBackend({ redis, timeoutMs, health }: RedisBackendOptions): LimiterBackend {
  return {
    limiter(options) {
      const insurance = new RateLimiterMemory(options);
      const consume = insurance.consume.bind(insurance);
      insurance.consume = (...args: Parameters<RateLimiterMemory["consume"]>) => {
        health.insuranceUsed();
        return consume(...args);
      };
      const limiter = new RateLimiterRedis({ ...options, storeClient: redis, rejectIfRedisNotReady: true });
      return new RLWrapperTimeouts({ limiter, timeoutMs, insuranceLimiter: insurance });
    },
  };
}
