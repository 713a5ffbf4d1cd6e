import type { Redis } from "ioredis";

/**
 * Answers a function to call before each command sent to `redis`: the first of a tick corks the
 * connection's socket until the tick ends, so the commands of a tick (one per key and limiter,
 * the limits being coalesced per turn, coalesced-calls.ts) leave in one write. ioredis's
 * auto-pipelining did the same with a Pipeline object and its promises per tick, and one more
 * pass of the event loop before the write.
 */
export function oneWritePerTick(redis: Redis): () => void {
  let corked = false;
  return () => {
    if (corked || redis.status !== "ready") return;
    corked = true;
    const stream = redis.stream;
    stream.cork();
    process.nextTick(() => {
      corked = false;
      stream.uncork();
    });
  };
}
