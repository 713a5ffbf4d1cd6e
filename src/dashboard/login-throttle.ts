import { RateLimiterMemory } from "rate-limiter-flexible";

export interface LoginThrottleOptions {
  /** Failed log-ins allowed for one email from one address per window. */
  perEmailAndAddress?: number;
  /** Failed log-ins allowed from one address, whatever the email, per window. */
  perAddress?: number;
  /** Failed log-ins allowed for one email from anywhere per window (distributed guessing). */
  perEmail?: number;
  windowSeconds?: number;
}

export interface LoginThrottle {
  /** Seconds to wait when this email or address has failed too often; 0 when it may try. */
  blockedFor(email: string, address: string): Promise<number>;
  /** Counts a failed attempt. */
  failed(email: string, address: string): Promise<void>;
  /** A success clears the email's count from that address (not the others). */
  succeeded(email: string, address: string): Promise<void>;
}

/**
 * Limits password guessing: only failures count, in fixed windows, per email and address, per
 * address and per email. Blocked attempts are refused before the password is checked, so a
 * guess made while blocked tells nothing. In-process: each instance counts on its own.
 */
export function createLoginThrottle(options: LoginThrottleOptions = {}): LoginThrottle {
  const duration = options.windowSeconds ?? 15 * 60;
  const limiters = [
    { limiter: new RateLimiterMemory({ points: options.perEmailAndAddress ?? 5, duration }), key: (e: string, a: string) => `${e}\n${a}` },
    { limiter: new RateLimiterMemory({ points: options.perAddress ?? 50, duration }), key: (_e: string, a: string) => a },
    { limiter: new RateLimiterMemory({ points: options.perEmail ?? 100, duration }), key: (e: string) => e },
  ];
  return {
    async blockedFor(email, address) {
      let wait = 0;
      for (const { limiter, key } of limiters) {
        const res = await limiter.get(key(email, address));
        if (res && res.consumedPoints >= limiter.points) wait = Math.max(wait, Math.ceil(res.msBeforeNext / 1000));
      }
      return wait;
    },
    async failed(email, address) {
      for (const { limiter, key } of limiters) await limiter.penalty(key(email, address), 1);
    },
    async succeeded(email, address) {
      await limiters[0]!.limiter.delete(limiters[0]!.key(email, address));
    },
  };
}
