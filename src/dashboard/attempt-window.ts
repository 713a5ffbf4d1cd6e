import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";

/** Attempts counted per key in fixed windows, taken before the work they guard. */
export interface AttemptWindow {
  /** Counts an attempt; 0 when it may go ahead, else the seconds until this key's window ends. */
  take(key: string): Promise<number>;
  /** Gives one attempt back (it succeeded, or it never went ahead). */
  giveBack(key: string): Promise<void>;
  /** Forgets the key's count. */
  clear(key: string): Promise<void>;
}

/**
 * In-process: each instance counts on its own. The count is taken synchronously when `take` is
 * called, so any number of simultaneous attempts get at most `points` go-aheads per window.
 */
export function attemptWindow(points: number, windowSeconds: number): AttemptWindow {
  const limiter = new RateLimiterMemory({ points, duration: windowSeconds });
  return {
    async take(key) {
      try {
        await limiter.consume(key);
        return 0;
      } catch (refused) {
        if (refused instanceof RateLimiterRes) return Math.max(1, Math.ceil(refused.msBeforeNext / 1000));
        throw refused;
      }
    },
    async giveBack(key) {
      await limiter.reward(key, 1);
    },
    async clear(key) {
      await limiter.delete(key);
    },
  };
}
