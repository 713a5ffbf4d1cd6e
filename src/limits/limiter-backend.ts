import type { Redis } from "ioredis";
import { RateLimiterCluster, RateLimiterMemory, RateLimiterRedis, RateLimiterRes, RLWrapperTimeouts, type RateLimiterAbstract } from "rate-limiter-flexible";
import { primaryCounters } from "../cluster/cluster-counters.js";
import type { Logger } from "../log/logger.js";
import type { RedisHealth } from "./redis-health.js";
import { oneWritePerTick } from "./redis-writes.js";
import { insuredCounters, memoryCounters, redisCounters, rememberedKeys, type SeededCounters } from "./seeded-counters.js";

/** Where counters live: this process, or a Redis shared by every instance. */
export interface LimiterBackend {
  /** A rate-limiter-flexible limiter of `points` per `duration` seconds, its keys under `keyPrefix`. */
  limiter(options: { keyPrefix: string; points: number; duration: number }): RateLimiterAbstract | RLWrapperTimeouts;
  /** Counters that must be seeded before use (the monthly quota's), under `keyPrefix`, each living `ttlSeconds`. */
  counters(options: { keyPrefix: string; ttlSeconds: number }): SeededCounters;
}

export function memoryBackend(): LimiterBackend {
  return { limiter: (options) => new RateLimiterMemory(options), counters: ({ ttlSeconds }) => memoryCounters(ttlSeconds) };
}

/** Longest a worker waits for the primary's counters before its insurance limiter answers. */
const clusterTimeoutMs = 1000;

/**
 * Counters held by the primary of `serve --workers N` (its RateLimiterClusterMaster), shared by
 * every worker; insured like Redis, so a stalled primary slows no request past clusterTimeoutMs
 * and fails none: the worker counts on its own meanwhile (logged at most once a minute).
 */
export function clusterBackend(logger: Logger): LimiterBackend {
  let lastLogged = 0;
  const insuranceUsed = () => {
    if (Date.now() - lastLogged < 60_000) return;
    lastLogged = Date.now();
    logger.warn({ timeoutMs: clusterTimeoutMs }, "the cluster primary did not answer in time: limits are counted in this worker");
  };
  return {
    limiter: (options) => insured(new RateLimiterCluster({ ...options, timeoutMs: clusterTimeoutMs }), options, clusterTimeoutMs, insuranceUsed),
    counters: ({ keyPrefix, ttlSeconds }) => insuredCounters(primaryCounters(keyPrefix, ttlSeconds), ttlSeconds, clusterTimeoutMs, insuranceUsed),
  };
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
  const beforeCommand = oneWritePerTick(redis);
  return {
    limiter: (options) => {
      const limiter = new RateLimiterRedis({ ...options, storeClient: redis, rejectIfRedisNotReady: true });
      const consume = limiter.consume.bind(limiter);
      limiter.consume = (...args) => {
        beforeCommand();
        return consume(...args);
      };
      return insured(limiter, options, timeoutMs, health.insuranceUsed);
    },
    counters: ({ keyPrefix, ttlSeconds }) =>
      insuredCounters(redisCounters(redis, keyPrefix, ttlSeconds, beforeCommand), ttlSeconds, timeoutMs, health.insuranceUsed),
  };
}

/**
 * `limiter`, answered by an in-process limiter with the same limits when it fails or takes longer
 * than timeoutMs. The insurance goes on from the count the shared limiter last gave for a key in
 * its current window, not from zero: a Redis merely slow under load (not down) used to let every
 * request it was too slow for through a fresh counter, past the key's limit.
 */
function insured(
  limiter: RateLimiterAbstract,
  options: { keyPrefix: string; points: number; duration: number },
  timeoutMs: number,
  insuranceUsed: () => void,
): RLWrapperTimeouts {
  const lastKnown = new Map<string, { consumed: number; until: number }>();
  const remember = (key: string | number, res: unknown) => {
    if (!(res instanceof RateLimiterRes)) return;
    if (lastKnown.size >= rememberedKeys) lastKnown.clear();
    lastKnown.set(String(key), { consumed: res.consumedPoints, until: Date.now() + res.msBeforeNext });
  };
  const shared = limiter.consume.bind(limiter);
  limiter.consume = (key, ...rest) =>
    shared(key, ...rest).then(
      (res) => {
        remember(key, res);
        return res;
      },
      (rejection: unknown) => {
        remember(key, rejection);
        throw rejection;
      },
    );

  const insurance = new RateLimiterMemory(options);
  const consume = insurance.consume.bind(insurance);
  /** Per key, the shared window the insurance was started from; every consume waits for that start. */
  const started = new Map<string, { until: number; ready: Promise<unknown> }>();
  insurance.consume = async (key, ...rest) => {
    insuranceUsed();
    const name = String(key);
    const known = lastKnown.get(name);
    if (known && known.until > Date.now()) {
      let start = started.get(name);
      if (start?.until !== known.until) {
        const seconds = Math.ceil((known.until - Date.now()) / 1000);
        start = { until: known.until, ready: insurance.get(key).then((held) => held ?? insurance.set(key, known.consumed, seconds)) };
        if (started.size >= rememberedKeys) started.clear();
        started.set(name, start);
      }
      await start.ready;
    }
    return consume(key, ...rest);
  };
  return new RLWrapperTimeouts({ limiter, timeoutMs, insuranceLimiter: insurance });
}
