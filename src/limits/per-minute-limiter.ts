import { RateLimiterRes } from "rate-limiter-flexible";
import { coalesced } from "./coalesced-calls.js";
import type { LimiterBackend } from "./limiter-backend.js";
import type { RateDecision, RateLimiter } from "./rate-limiter.js";

/**
 * Fixed windows per key (60 seconds, D10), one rate-limiter-flexible limiter per plan, on the
 * given backend. The requests of one event-loop turn for the same key consume their points in
 * one call (coalesced): the window's counter goes up by all of them at once, as it would have one
 * by one, and each request is decided by the count as of its own point, so exactly the first
 * ones that fit are admitted, across processes too (the counter's additions are atomic).
 */
export function createPerMinuteLimiter(backend: LimiterBackend, windowSeconds = 60): RateLimiter {
  const byPlan = new Map<string, (keyId: string, points: number) => Promise<RateDecision>>();
  return {
    consume(keyId, plan) {
      let consume = byPlan.get(plan.name);
      if (!consume) {
        const limiter = backend.limiter({ points: plan.perMinute, duration: windowSeconds, keyPrefix: `ct:rl:${plan.name}` });
        consume = coalesced(
          (key, total) => settle(limiter.consume(key, total)),
          ([res], before, count, total) =>
            decision(plan.perMinute, res.consumedPoints - total + before + count, res.msBeforeNext, windowSeconds),
        );
        byPlan.set(plan.name, consume);
      }
      return consume(keyId, 1);
    },
  };
}

/** A consume's result either way: rate-limiter-flexible rejects with the result when over the limit. */
export function settle(consumed: Promise<RateLimiterRes>): Promise<[RateLimiterRes, boolean]> {
  return consumed.then(
    (res): [RateLimiterRes, boolean] => [res, true],
    (rejection: unknown): [RateLimiterRes, boolean] => {
      if (rejection instanceof RateLimiterRes) return [rejection, false];
      throw rejection;
    },
  );
}

/** The D10 figures for a request that brought the window's count to `consumed`. */
function decision(limit: number, consumed: number, msBeforeNext: number, maxWait: number): RateDecision {
  const ms = Math.max(0, msBeforeNext);
  return {
    allowed: consumed <= limit,
    limit,
    remaining: Math.max(0, limit - consumed),
    resetAt: Math.ceil((Date.now() + ms) / 1000),
    retryAfter: Math.min(maxWait, Math.max(1, Math.ceil(ms / 1000))),
  };
}
