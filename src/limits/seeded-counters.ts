import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { withTimeLimit } from "../store/time-limit.js";
import { coalesced } from "./coalesced-calls.js";

/**
 * Counters that exist only once seeded: what the monthly quota counts on (D23, D40). A counter
 * that is missing (a new month, a restart, a Redis that lost it) is never counted on from zero:
 * `add` answers undefined, the caller counts the stored traces and seeds it, and whichever
 * process seeds first wins, so concurrent processes all reserve against the rebuilt count.
 * Each seed gives the counter a new generation, so that a process can tell a counter rebuilt
 * under its reservations in flight (which the rebuild did not count) from the one it added to.
 */
export interface SeededCounters {
  /**
   * Adds `points` to the counter and answers its new value and generation; undefined when there
   * is none. `carried`: they are a process's traces in flight added to a rebuilt counter.
   */
  add(key: string, points: number, carried?: boolean): Promise<CounterValue | undefined>;
  /**
   * Says that a count of the stored traces for the missing counter begins; answers the token its
   * seed passes on. Lost with the counters (Redis emptied), and so is every token of a counter
   * once seeded: a seed whose count began before that would lack what was stored meanwhile.
   */
  beginSeed(key: string): Promise<string>;
  /**
   * Creates the counter at `value`, of a new generation, unless it exists (the first seed wins),
   * for `ttlSeconds`. Creates nothing when it is missing and `token` (from beginSeed) is no longer
   * known: the reservation's next add then finds it missing. Without a token it creates it anyway.
   */
  seed(key: string, value: number, token?: string): Promise<void>;
  /**
   * Takes `points` off the counter, if it exists and, given `generation`, is still of it: a
   * counter seeded since was counted from the store, which does not hold them either. Insured
   * counters take them off their own when the shared one fails, and reject (SharedTakeBackError).
   */
  takeBack(key: string, points: number, generation?: string): Promise<void>;
}

export interface CounterValue {
  value: number;
  /**
   * Which seed the counter is of; undefined for an answer of the insurance (insuredCounters),
   * which stands in for the shared counter and is no generation of it.
   */
  generation: string | undefined;
  /**
   * Shared counters only: how long ago it was seeded (ms), and the points added to it as carried
   * in all, so that a reservation on a counter just rebuilt can wait for other processes' traces
   * in flight and count them as before itself.
   */
  ageMs?: number;
  carried?: number;
}

/** Counters in this process's memory, each living `ttlSeconds` from its seed. */
export function memoryCounters(ttlSeconds: number): SeededCounters & { forget(key: string): void } {
  const counters = new Map<string, { value: number; until: number; generation: string }>();
  /** The tokens of the counts begun for each missing counter. */
  const counting = new Map<string, Set<string>>();
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
      return { value: counter.value, generation: counter.generation };
    },
    async beginSeed(key) {
      const token = randomUUID();
      const tokens = counting.get(key);
      if (tokens) tokens.add(token);
      else counting.set(key, new Set([token]));
      return token;
    },
    async seed(key, value, token) {
      if (live(key) || (token !== undefined && !counting.get(key)?.has(token))) return;
      counting.delete(key);
      const now = Date.now();
      // Last month's counters go once in a while, not one by one.
      if (now >= nextSweep) {
        nextSweep = now + 60_000;
        for (const [name, counter] of counters) if (counter.until <= now) counters.delete(name);
      }
      counters.set(key, { value, until: now + ttlSeconds * 1000, generation: randomUUID() });
    },
    async takeBack(key, points, generation) {
      const counter = live(key);
      if (counter && (generation === undefined || generation === counter.generation)) counter.value -= points;
    },
    forget(key) {
      counters.delete(key);
    },
  };
}

/*
 * A counter is its value (KEYS[1]), its generation (KEYS[2], '<token>@<seconds>.<microseconds>' of
 * its seed by Redis's clock), written together by the seed, and the points carried to it
 * (KEYS[3]). A counter without a generation (one seeded before generations, or whose generation
 * key alone was evicted) answers '', which a process that saw another one takes for a new seed.
 */

/**
 * Adds to a counter only if it exists (ARGV: points, '1' when carried), answering {value,
 * generation, age in ms or -1, carried}: a missing counter answers nil instead of starting from zero.
 */
const addIfPresent = `if redis.call('exists', KEYS[1]) == 0 then return false end
local value = redis.call('incrby', KEYS[1], ARGV[1])
if ARGV[2] == '1' then
  redis.call('incrby', KEYS[3], ARGV[1])
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then redis.call('pexpire', KEYS[3], ttl) end
end
local generation = redis.call('get', KEYS[2]) or ''
local s, us = string.match(generation, '@(%d+)%.(%d+)$')
local age = -1
if s then
  local now = redis.call('time')
  age = math.floor((tonumber(now[1]) - tonumber(s)) * 1000 + (tonumber(now[2]) - tonumber(us)) / 1000)
end
return {value, generation, age, tonumber(redis.call('get', KEYS[3]) or '0')}`;

/** Notes a count begun (KEYS[1]: the counter's set of tokens; ARGV: token, ttl). */
const beginSeed = `redis.call('sadd', KEYS[1], ARGV[1])
redis.call('expire', KEYS[1], ARGV[2])
return 0`;

/** Creates the counter (ARGV: value, generation, ttl, token) unless it exists or the token is not known. */
const seedIfMissing = `if redis.call('exists', KEYS[1]) == 1 or (ARGV[4] and redis.call('sismember', KEYS[3], ARGV[4]) == 0) then return 0 end
local now = redis.call('time')
redis.call('set', KEYS[1], ARGV[1], 'EX', ARGV[3])
redis.call('set', KEYS[2], ARGV[2] .. '@' .. now[1] .. '.' .. now[2], 'EX', ARGV[3])
redis.call('del', KEYS[3], KEYS[4])
return 1`;

/** Takes ARGV[1] off the counter if it exists and, given a generation (ARGV[2]), is still of it. */
const takeBackIfOf = `if redis.call('exists', KEYS[1]) == 1 and (ARGV[2] == nil or (redis.call('get', KEYS[2]) or '') == ARGV[2]) then redis.call('incrby', KEYS[1], -ARGV[1]) end
return 0`;

interface CounterCommands {
  ctAddIfPresent(key: string, generationKey: string, carriedKey: string, points: number, carried: string): Promise<[number, string, number, number] | null>;
  ctBeginSeed(tokensKey: string, token: string, ttlSeconds: number): Promise<number>;
  ctSeedIfMissing(key: string, generationKey: string, tokensKey: string, carriedKey: string, value: number, generation: string, ttlSeconds: number, ...token: string[]): Promise<number>;
  ctTakeBackIfOf(key: string, generationKey: string, points: number, ...generation: string[]): Promise<number>;
}

/**
 * Counters in Redis under `keyPrefix`, shared by every instance. Each call fails at once while
 * the connection is not ready, so the insurance answers without waiting (insuredCounters);
 * `beforeCommand` is called before each command is sent.
 */
export function redisCounters(redis: Redis, keyPrefix: string, ttlSeconds: number, beforeCommand: () => void = () => {}): SeededCounters {
  const commands = redis as unknown as Redis & CounterCommands;
  if (typeof commands.ctAddIfPresent !== "function") {
    redis.defineCommand("ctAddIfPresent", { numberOfKeys: 3, lua: addIfPresent });
    redis.defineCommand("ctBeginSeed", { numberOfKeys: 1, lua: beginSeed });
    redis.defineCommand("ctSeedIfMissing", { numberOfKeys: 4, lua: seedIfMissing });
    redis.defineCommand("ctTakeBackIfOf", { numberOfKeys: 2, lua: takeBackIfOf });
  }
  const ready = () => {
    if (redis.status !== "ready") throw new Error(`Redis is ${redis.status}`);
    beforeCommand();
  };
  return {
    async add(key, points, carried) {
      ready();
      const answer = await commands.ctAddIfPresent(`${keyPrefix}:${key}`, `${keyPrefix}:${key}:g`, `${keyPrefix}:${key}:c`, points, carried ? "1" : "0");
      if (answer === null) return undefined;
      const [value, generation, ageMs, carriedInAll] = answer;
      return { value: Number(value), generation, ...(ageMs >= 0 ? { ageMs: Number(ageMs) } : {}), carried: Number(carriedInAll) };
    },
    async beginSeed(key) {
      ready();
      const token = randomUUID();
      await commands.ctBeginSeed(`${keyPrefix}:${key}:s`, token, ttlSeconds);
      return token;
    },
    async seed(key, value, token) {
      ready();
      const onlyFor = token === undefined ? [] : [token];
      await commands.ctSeedIfMissing(`${keyPrefix}:${key}`, `${keyPrefix}:${key}:g`, `${keyPrefix}:${key}:s`, `${keyPrefix}:${key}:c`, value, randomUUID(), ttlSeconds, ...onlyFor);
    },
    async takeBack(key, points, generation) {
      ready();
      const onlyOf = generation === undefined ? [] : [generation];
      await commands.ctTakeBackIfOf(`${keyPrefix}:${key}`, `${keyPrefix}:${key}:g`, points, ...onlyOf);
    },
  };
}

/**
 * `counters` whose adds to the same counter within one event-loop turn are one add of their sum
 * (coalesced): each caller gets the value as of its own points, as if the adds had been made one
 * by one in the order they were asked for. So are the turn's take-backs from the same counter
 * and generation (refusals under a flood of requests). Carried adds, rare, go on their own.
 */
export function coalescedCounters(counters: SeededCounters): SeededCounters {
  const add = coalesced(
    (key, total) => counters.add(key, total),
    (answer: CounterValue | undefined, before, count, total) => answer && (count === total ? answer : { ...answer, value: answer.value - total + before + count }),
  );
  // The generation rides in the batch's key: only take-backs from the same one are summed.
  const takeBack = coalesced(
    (keyAndGeneration, total) => {
      const [key, generation] = JSON.parse(keyAndGeneration) as [string, string | null];
      return counters.takeBack(key, total, generation ?? undefined);
    },
    () => undefined,
  );
  return {
    ...counters,
    add: (key, points, carried) => (carried ? counters.add(key, points, true) : add(key, points)),
    takeBack: (key, points, generation) => takeBack(JSON.stringify([key, generation ?? null]), points),
  };
}

/** A take-back that reached only the insurance counter in this process: the shared counter still counts the points. */
export class SharedTakeBackError extends Error {}

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
    async add(key, points, carried) {
      try {
        const answer = await limited(() => shared.add(key, points, carried));
        if (answer !== undefined) {
          if (lastKnown.size >= rememberedKeys) lastKnown.clear();
          lastKnown.set(key, answer.value);
          local.forget(key);
        }
        return answer;
      } catch {
        insuranceUsed();
        const known = lastKnown.get(key);
        if (known !== undefined) await local.seed(key, known);
        const answer = await local.add(key, points);
        return answer && { value: answer.value, generation: undefined };
      }
    },
    async beginSeed(key) {
      // No token ("") when the shared counters did not answer: the seed below is then unconditional.
      return limited(() => shared.beginSeed(key)).catch(() => {
        insuranceUsed();
        return "";
      });
    },
    async seed(key, value, token) {
      // Seeded here too, so that an add the shared counters fail to answer next has a start.
      await local.seed(key, value);
      await limited(() => shared.seed(key, value, token || undefined)).catch(insuranceUsed);
    },
    async takeBack(key, points, generation) {
      try {
        await limited(() => shared.takeBack(key, points, generation));
      } catch (error) {
        insuranceUsed();
        await local.takeBack(key, points);
        // Taken back here only: the shared counter still counts them, which the caller is told.
        throw new SharedTakeBackError(`the shared counter did not take back ${points}`, { cause: error });
      }
    },
  };
}
