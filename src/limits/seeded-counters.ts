import type { Redis } from "ioredis";
import { withTimeLimit } from "../store/time-limit.js";

/**
 * Counters that exist only once seeded: what the monthly quota counts on (D23, D40). A counter
 * that is missing (a new month, a restart, a Redis that lost it) is never counted on from zero:
 * `add` answers undefined, the caller counts the stored traces and seeds it, and whichever
 * process seeds first wins, so concurrent processes all reserve against the rebuilt count.
 */
export interface SeededCounters {
  /** Adds `points` to the counter and answers its new value; undefined when there is none. */
  add(key: string, points: number): Promise<number | undefined>;
  /** Creates the counter at `value` unless it exists (the first seed wins), for `ttlSeconds`. */
  seed(key: string, value: number): Promise<void>;
  /** Takes `points` off the counter, if it exists (a missing counter is seeded from the store, which does not hold them). */
  takeBack(key: string, points: number): Promise<void>;
}

/** Counters in this process's memory, each living `ttlSeconds` from its seed. */
export function memoryCounters(ttlSeconds: number): SeededCounters & { forget(key: string): void } {
  const counters = new Map<string, { value: number; until: number }>();
  let nextSweep = 0;
  const live = (key: string) => {
    const counter = counters.get(key);
    if (counter && counter.until <= Date.now()) {
      counters.delete(key);
      return undefined;
    }
    return counter;
  };
  return {
    async add(key, points) {
      const counter = live(key);
      if (!counter) return undefined;
      counter.value += points;
      return counter.value;
    },
    async seed(key, value) {
      if (live(key)) return;
      const now = Date.now();
      // Last month's counters go once in a while, not one by one.
      if (now >= nextSweep) {
        nextSweep = now + 60_000;
        for (const [name, counter] of counters) if (counter.until <= now) counters.delete(name);
      }
      counters.set(key, { value, until: now + ttlSeconds * 1000 });
    },
    async takeBack(key, points) {
      const counter = live(key);
      if (counter) counter.value -= points;
    },
    forget(key) {
      counters.delete(key);
    },
  };
}

/** Adds to a counter only if it exists: a missing counter answers nil instead of starting from zero. */
const addIfPresent = `if redis.call('exists', KEYS[1]) == 1 then return redis.call('incrby', KEYS[1], ARGV[1]) end
return false`;

interface CounterCommands {
  ctAddIfPresent(key: string, points: number): Promise<number | null>;
}

/**
 * Counters in Redis under `keyPrefix`, shared by every instance. Each call fails at once while
 * the connection is not ready, so the insurance answers without waiting (insuredCounters).
 */
export function redisCounters(redis: Redis, keyPrefix: string, ttlSeconds: number): SeededCounters {
  const commands = redis as unknown as Redis & CounterCommands;
  if (typeof commands.ctAddIfPresent !== "function") redis.defineCommand("ctAddIfPresent", { numberOfKeys: 1, lua: addIfPresent });
  const ready = () => {
    if (redis.status !== "ready") throw new Error(`Redis is ${redis.status}`);
  };
  return {
    async add(key, points) {
      ready();
      const value = await commands.ctAddIfPresent(`${keyPrefix}:${key}`, points);
      return value === null ? undefined : Number(value);
    },
    async seed(key, value) {
      ready();
      await redis.set(`${keyPrefix}:${key}`, value, "EX", ttlSeconds, "NX");
    },
    async takeBack(key, points) {
      ready();
      await commands.ctAddIfPresent(`${keyPrefix}:${key}`, -points);
    },
  };
}

/** Counters whose last shared value is remembered for the insurance; past this many the memory starts over. */
export const rememberedKeys = 100_000;

/**
 * `shared` (Redis, or the cluster primary), answered by counters in this process when it fails or
 * takes longer than timeoutMs (D24): the documented degradation. The local counter starts from the
 * value the shared one last gave, or, when there is none, is seeded like any missing counter
 * (from the stored traces); it is dropped whenever the shared counter answers again, so the next
 * outage starts from the shared value, not from an old local one.
 */
export function insuredCounters(shared: SeededCounters, ttlSeconds: number, timeoutMs: number, insuranceUsed: () => void): SeededCounters {
  const local = memoryCounters(ttlSeconds);
  const lastKnown = new Map<string, number>();
  const limited = <T>(work: () => Promise<T>) => withTimeLimit(work(), timeoutMs, () => new Error(`no answer within ${timeoutMs} ms`));
  return {
    async add(key, points) {
      try {
        const value = await limited(() => shared.add(key, points));
        if (value !== undefined) {
          if (lastKnown.size >= rememberedKeys) lastKnown.clear();
          lastKnown.set(key, value);
          local.forget(key);
        }
        return value;
      } catch {
        insuranceUsed();
        const known = lastKnown.get(key);
        if (known !== undefined) await local.seed(key, known);
        return local.add(key, points);
      }
    },
    async seed(key, value) {
      // Seeded here too, so that an add the shared counters fail to answer next has a start.
      await local.seed(key, value);
      await limited(() => shared.seed(key, value)).catch(insuranceUsed);
    },
    async takeBack(key, points) {
      try {
        await limited(() => shared.takeBack(key, points));
      } catch {
        insuranceUsed();
        await local.takeBack(key, points);
      }
    },
  };
}
