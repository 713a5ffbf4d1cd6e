import type { Plan } from "../config/plans.js";

/** The outcome of counting one request against a key's per-minute window (D10). */
export interface RateDecision {
  allowed: boolean;
  /** The plan's requests per minute. */
  limit: number;
  /** Requests left in the window after this one. */
  remaining: number;
  /** Unix time, in whole seconds, at which the window resets. */
  resetAt: number;
  /** Whole seconds until the reset, 1 to 60. */
  retryAfter: number;
}

/** Per-key per-minute limiter port: in-process by default, Redis-backed when configured. */
export interface RateLimiter {
  consume(keyId: string, plan: Plan): Promise<RateDecision>;
}
