import { ConnectError } from "@connectrpc/connect";
import { refusalReason } from "../ingest/ingest-errors.js";
import type { IngestPipeline } from "../ingest/ingest-pipeline.js";
import type { Metrics } from "./metrics.js";

/**
 * The ingest pipeline with its limiters' decisions counted, read off what it answers: an
 * admission passed the per-key limit (and the failed-auth limiter, which only speaks when it
 * refuses), an accepted trace passed the monthly quota. The pipeline itself is untouched.
 */
export function observedPipeline(pipeline: IngestPipeline, metrics: Metrics): IngestPipeline {
  const refused = (error: unknown) => {
    const reason = error instanceof ConnectError ? refusalReason(error) : undefined;
    if (reason === "RATE_LIMITED") metrics.limiterDecision("per_key", "refused");
    else if (reason === "AUTH_RATE_LIMITED") metrics.limiterDecision("failed_auth", "refused");
    else if (reason === "QUOTA_EXCEEDED") metrics.limiterDecision("monthly_quota", "refused");
    else if (reason === "STORE_UNAVAILABLE") metrics.storeError("ingest");
    throw error;
  };
  return {
    admit: (...args) =>
      pipeline.admit(...args).then((admission) => {
        metrics.limiterDecision("per_key", "allowed");
        return admission;
      }, refused),
    abandon: (admission) => pipeline.abandon(admission),
    priceBook: (admission) => pipeline.priceBook(admission).catch(refused),
    accept: (...args) =>
      pipeline.accept(...args).then((headers) => {
        metrics.limiterDecision("monthly_quota", "allowed");
        return headers;
      }, refused),
    acceptCalls: (...args) =>
      pipeline.acceptCalls(...args).then((outcome) => {
        if (outcome.stored + outcome.duplicates > 0) metrics.limiterDecision("monthly_quota", "allowed");
        return outcome;
      }, refused),
  };
}
