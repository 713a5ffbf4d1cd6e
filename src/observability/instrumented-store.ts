import type { TraceStore } from "../store/trace-store.js";
import type { Metrics } from "./metrics.js";

/**
 * The store as the batching writer sees it, observed: each batch's size and commit time, and
 * each failed batch or failed write as a store error. Everything else passes through.
 */
export function instrumentedStore(store: TraceStore, metrics: Metrics): TraceStore {
  return {
    ...(store.handover === undefined ? {} : { handover: store.handover }),
    exportTraces: (query) => store.exportTraces(query),
    deleteExpired: () => store.deleteExpired(),
    writeBatch: async (writes) => {
      const started = performance.now();
      try {
        const outcomes = await store.writeBatch(writes);
        const failed = outcomes.filter((o) => o.kind === "failed").length;
        if (failed > 0) metrics.storeError("write");
        return outcomes;
      } catch (error) {
        metrics.storeError("write");
        throw error;
      } finally {
        metrics.batch(writes.length, (performance.now() - started) / 1000);
      }
    },
  };
}
