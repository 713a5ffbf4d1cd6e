import { Code, ConnectError } from "@connectrpc/connect";
import { rateLimitHeaders } from "../limits/rate-limit-headers.js";
import type { RateLimiter } from "../limits/rate-limiter.js";
import type { ApiKeyRecord } from "../store/records.js";

/**
 * A read key's own per-minute window (READ_PER_MINUTE), counted by the same limiter as ingest
 * (in-process or Redis) under a plan of its own, so reads never spend a key's ingest window.
 * Answers the D10 headers; past the limit, RESOURCE_EXHAUSTED carrying them and the wait.
 */
export function readLimit(limiter: RateLimiter, perMinute: number) {
  const plan = { name: "read", perMinute, perMonth: 0, maxKeys: 0 };
  return async (key: ApiKeyRecord): Promise<Record<string, string>> => {
    const decision = await limiter.consume(key.id, plan);
    const headers = rateLimitHeaders(decision);
    if (!decision.allowed) {
      throw new ConnectError("Rate limit exceeded", Code.ResourceExhausted, { ...headers, "retry-after": String(decision.retryAfter) });
    }
    return headers;
  };
}
