import type { PostResult } from "./pipelined-connection.js";

export interface RetryPolicy {
  /** Attempts per trace, the first included. */
  maxAttempts: number;
  /** Backoff before the second attempt; doubles with each further one. */
  baseDelayMs: number;
  /**
   * Longest wait worth making. Backoff is capped here, and a `retry_after`
   * beyond it (a monthly quota resets in days) means the trace is given up.
   */
  maxDelayMs: number;
}

// 429 and 503 are the service's own "try later" (D10, D11, D13); 502 and 504
// are what a proxy in front of a self-hosted server says when it restarts.
// The Idempotency-Key (D14) makes a retry safe even if the first try landed.
const RETRYABLE_STATUS = new Set([429, 502, 503, 504]);

/**
 * How long to wait before attempt `attempt + 1` after `outcome` (a response,
 * or `undefined` for a network error or timeout), or `undefined` to give up.
 * `random` in [0, 1) spreads clients that failed together.
 */
export function retryDelay(
  outcome: PostResult | undefined,
  attempt: number,
  policy: RetryPolicy,
  random: () => number = Math.random,
): number | undefined {
  if (attempt >= policy.maxAttempts) return undefined;
  if (outcome !== undefined && !RETRYABLE_STATUS.has(outcome.status)) return undefined;
  if (outcome?.retryAfterSeconds !== undefined) {
    const delay = outcome.retryAfterSeconds * 1000;
    return delay <= policy.maxDelayMs ? delay : undefined;
  }
  const backoff = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return backoff / 2 + (random() * backoff) / 2;
}
