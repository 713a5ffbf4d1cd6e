import cluster from "node:cluster";
import { type CounterValue, memoryCounters, type SeededCounters } from "../limits/seeded-counters.js";

/**
 * The monthly quota's counters of `serve --workers N` without Redis live in the primary, like the
 * per-minute windows (rate-limiter-flexible's cluster master), so that a counter is seeded once
 * for every worker: a worker racing another's rebuild finds no counter and seeds it too, and the
 * first seed wins (D40). Each seed is of a new generation, so a primary restarted under live
 * workers is told from the one their reservations in flight went to, as a Redis emptied is.
 * Messages carry this channel; the cluster master ignores them.
 */
const channel = "calltrace:counters";

interface CounterRequest {
  channel: typeof channel;
  id: number;
  op: "add" | "beginSeed" | "seed" | "takeBack";
  key: string;
  points: number;
  ttlSeconds: number;
  /** takeBack's: only from a counter of this generation; seed's: its beginSeed token. */
  generation?: string;
}

interface CounterReply {
  channel: typeof channel;
  id: number;
  value: CounterValue | string | null;
}

const isRequest = (message: unknown): message is CounterRequest => (message as CounterRequest | undefined)?.channel === channel;

/** In the primary: answers the workers' counter requests from counters held here. */
export function serveWorkerCounters(): void {
  const byTtl = new Map<number, SeededCounters>();
  cluster.on("message", (worker, message: unknown) => {
    if (!isRequest(message)) return;
    let counters = byTtl.get(message.ttlSeconds);
    if (!counters) {
      counters = memoryCounters(message.ttlSeconds);
      byTtl.set(message.ttlSeconds, counters);
    }
    const { op, key, points, generation } = message;
    const done =
      op === "add"
        ? counters.add(key, points)
        : op === "beginSeed"
          ? counters.beginSeed(key)
          : op === "seed"
            ? counters.seed(key, points, generation)
            : counters.takeBack(key, points, generation);
    void done.then((value) => {
      const reply: CounterReply = { channel, id: message.id, value: value ?? null };
      if (worker.isConnected()) worker.send(reply);
    });
  });
}

/** Requests waiting for the primary, by id; one listener per worker process serves them all. */
const waiting = new Map<number, (value: CounterReply["value"] | undefined) => void>();
let nextId = 0;
let listening = false;

/** In a worker: the primary's counters, under `keyPrefix` (insure them: the primary may stall). */
export function primaryCounters(keyPrefix: string, ttlSeconds: number): SeededCounters {
  if (!listening) {
    listening = true;
    process.on("message", (message: unknown) => {
      if ((message as CounterReply | undefined)?.channel !== channel) return;
      const { id, value } = message as CounterReply;
      waiting.get(id)?.(value ?? undefined);
      waiting.delete(id);
    });
  }
  const ask = (op: CounterRequest["op"], key: string, points: number, generation?: string) =>
    new Promise<CounterReply["value"] | undefined>((resolve, reject) => {
      const id = ++nextId;
      waiting.set(id, resolve);
      const request: CounterRequest = { channel, id, op, key: `${keyPrefix}:${key}`, points, ttlSeconds, ...(generation === undefined ? {} : { generation }) };
      process.send!(request, undefined, undefined, (error) => {
        if (!error) return;
        waiting.delete(id);
        reject(error);
      });
    });
  return {
    add: async (key, points) => (await ask("add", key, points)) as CounterValue | undefined,
    beginSeed: async (key) => (await ask("beginSeed", key, 0)) as string,
    seed: async (key, value, token) => void (await ask("seed", key, value, token)),
    takeBack: async (key, points, generation) => void (await ask("takeBack", key, points, generation)),
  };
}
