import type { OtlpSpanIds, TraceStore } from "../trace-store.js";
import type { MongoCollections } from "./mongo-collections.js";

/** TraceStore.otlpSpans on MongoDB: one find through the (account, OTLP trace id) index. */
export function mongoOtlpSpans(c: MongoCollections): TraceStore["otlpSpans"] {
  return async (accountId, otlpTraceIds) => {
    const docs = await c.traces
      .find(
        { "meta.accountId": accountId, otlpTraceId: { $in: otlpTraceIds } },
        { projection: { otlpTraceId: 1, otlpSpanId: 1, otlpParentSpanId: 1 } },
      )
      .toArray();
    return docs.map(
      (d): OtlpSpanIds => ({
        otlpTraceId: d.otlpTraceId ?? "",
        otlpSpanId: d.otlpSpanId ?? "",
        otlpParentSpanId: d.otlpParentSpanId ?? "",
      }),
    );
  };
}
