import { RateLimiterRes } from "rate-limiter-flexible";
import type { LimiterBackend } from "./limiter-backend.js";
import type { RateDecision, RateLimiter } from "./rate-limiter.js";

/** Fixed windows per key (60 seconds, D10), one rate-limiter-flexible limiter per plan, on the given backend. */
export function createRateLimiter(backend: LimiterBackend, windowSeconds = 60): RateLimiter {
  const byPlan = new Map<string, ReturnType<LimiterBackend["limiter"]>>();
  return {
    consume(keyId, plan) {
      let limiter = byPlan.get(plan.name);
      if (!limiter) {
        limiter = backend.limiter({ points: plan.perMinute, duration: windowSeconds, keyPrefix: `ct:rl:${plan.name}` });
        byPlan.set(plan.name, limiter);
      }
      // Every request passes here: the decision is made in the consume's own callbacks, without
      // settle's pair or a further promise of an async function.
      return limiter.consume(keyId).then(
        (res) => decision(plan.perMinute, res, true, windowSeconds),
        (rejection: unknown) => {
          if (rejection instanceof RateLimiterRes) return decision(plan.perMinute, rejection, false, windowSeconds);
          throw rejection;
        },
      );
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

/** Turns rate-limiter-flexible's result into the D10 figures. */
function decision(limit: number, res: RateLimiterRes, allowed: boolean, maxWait: number): RateDecision {
  const msBeforeNext = Math.max(0, res.msBeforeNext);
  return {
    allowed,
    limit,
    remaining: Math.max(0, res.remainingPoints),
    resetAt: Math.ceil((Date.now() + msBeforeNext) / 1000),
    retryAfter: Math.min(maxWait, Math.max(1, Math.ceil(msBeforeNext / 1000))),
  };
}
