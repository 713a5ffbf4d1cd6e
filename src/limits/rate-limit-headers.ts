import type { RateDecision } from "./rate-limiter.js";

/** Response headers as a plain object: built on every request, so no Headers instance. */
export type HeaderFields = Record<string, string>;

/** The D10 headers for a limiter decision (lower case, as HTTP/2 and gRPC metadata need). */
export function rateLimitHeaders(decision: RateDecision): HeaderFields {
  return {
    "x-ratelimit-limit": String(decision.limit),
    "x-ratelimit-remaining": String(decision.remaining),
    "x-ratelimit-reset": String(decision.resetAt),
  };
}
