import type { RateDecision } from "./rate-limiter.js";

/** The D10 headers for a limiter decision (lower case, as HTTP/2 and gRPC metadata need). */
export function rateLimitHeaders(decision: RateDecision): Headers {
  return new Headers({
    "x-ratelimit-limit": String(decision.limit),
    "x-ratelimit-remaining": String(decision.remaining),
    "x-ratelimit-reset": String(decision.resetAt),
  });
}
