import type { LimiterBackend } from "./limiter-backend.js";
import { settle } from "./per-minute-limiter.js";

/** Failed authentications one client address may make per minute before it is refused (D12). */
export const authFailuresPerMinute = 30;

export interface AuthFailureLimiter {
  /** Counts a failed authentication from `address`; returns the seconds to wait when it is over the limit. */
  failed(address: string | undefined): Promise<number | undefined>;
}

/**
 * Limits failed authentications per client address (D12). Only failures count and only failures
 * are refused: a valid key from the same address (a shared NAT) keeps working.
 */
export function createAuthFailureLimiter(backend: LimiterBackend): AuthFailureLimiter {
  const limiter = backend.limiter({ keyPrefix: "ct:authfail", points: authFailuresPerMinute, duration: 60 });
  return {
    async failed(address) {
      if (!address) return undefined;
      const [res, allowed] = await settle(limiter.consume(address));
      return allowed ? undefined : Math.min(60, Math.max(1, Math.ceil(res.msBeforeNext / 1000)));
    },
  };
}
