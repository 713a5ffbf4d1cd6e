import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import type { Plan } from "../config/plans.js";
import type { RateDecision, RateLimiter } from "./rate-limiter.js";

const windowSeconds = 60;

/** In-process fixed 60-second windows per key, one rate-limiter-flexible limiter per plan. */
export function createMemoryRateLimiter(): RateLimiter {
  const byPlan = new Map<string, RateLimiterMemory>();
  return {
    async consume(keyId, plan) {
      let limiter = byPlan.get(plan.name);
      if (!limiter) {
        limiter = new RateLimiterMemory({ points: plan.perMinute, duration: windowSeconds, keyPrefix: `rl:${plan.name}` });
        byPlan.set(plan.name, limiter);
      }
      try {
        return decision(plan, await limiter.consume(keyId), true);
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) return decision(plan, rejection, false);
        throw rejection;
      }
    },
  };
}

/** Turns rate-limiter-flexible's result into the D10 figures; shared by every limiter backend. */
export function decision(plan: Plan, res: RateLimiterRes, allowed: boolean): RateDecision {
  const msBeforeNext = Math.max(0, res.msBeforeNext);
  return {
    allowed,
    limit: plan.perMinute,
    remaining: Math.max(0, res.remainingPoints),
    resetAt: Math.ceil((Date.now() + msBeforeNext) / 1000),
    retryAfter: Math.min(windowSeconds, Math.max(1, Math.ceil(msBeforeNext / 1000))),
  };
}
