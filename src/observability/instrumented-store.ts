import type { TraceStore } from "../store/trace-store.js";
import type { Metrics } from "./metrics.js";
import type { WriteHealth } from "./write-health.js";

/**
 * The store as the batching writer sees it, observed: each batch's size and commit time, and
 * each failed batch or failed write as a store error, told to the write health too (readiness,
 * logs). Everything else passes through.
 */
export function instrumentedStore(store: TraceStore, metrics: Metrics, health: WriteHealth): TraceStore {
  return {
    ...(store.handover === undefined ? {} : { handover: store.handover }),
    exportTraces: (query) => store.exportTraces(query),
    otlpSpans: (accountId, otlpTraceIds) => store.otlpSpans(accountId, otlpTraceIds),
    modelCalls: (since) => store.modelCalls(since),
    deleteExpired: () => store.deleteExpired(),
    writeBatch: async (writes) => {
      const started = performance.now();
      try {
        const outcomes = await store.writeBatch(writes);
        const failed = outcomes.find((o) => o.kind === "failed");
        if (failed) {
          metrics.storeError("write");
          health.failed(failed.error);
        } else health.succeeded();
        return outcomes;
      } catch (error) {
        metrics.storeError("write");
        health.failed(error as Error);
        throw error;
      } finally {
        metrics.batch(writes.length, (performance.now() - started) / 1000);
      }
    },
  };
}
