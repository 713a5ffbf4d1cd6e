import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type StoredTrace, type Trace, TraceSource } from "../../gen/calltrace/v1/trace_pb.js";
import { projectCost, serverPricing } from "../pricing/custom-prices.js";
import type { PriceBook } from "../pricing/price-match.js";

/** What the server knows of a trace beyond its contract fields: how it arrived and what the server priced it at. */
export type TraceOrigin = Pick<StoredTrace, "source" | "priceCheck" | "otlpTraceId" | "otlpSpanId" | "otlpParentSpanId" | "serviceName"> & {
  serverCostUsd?: number;
};

/**
 * The spec's way in: the client measured and priced the call. The server prices it too, with the
 * project's custom prices before the catalog, and keeps its price beside the client's, so that
 * unknown models and wrong client prices show (D30). `at`: when the call was made (its
 * `called_at`, else now), which a custom price's effective range is checked against.
 */
export function apiOrigin(trace: Trace, book: PriceBook, at: Date): TraceOrigin {
  const usage = {
    provider: trace.provider,
    model: trace.model,
    tokensIn: trace.tokensIn!,
    tokensOut: trace.tokensOut!,
    tokensCachedIn: trace.tokensCachedIn,
    tokensCacheWrite: trace.tokensCacheWrite,
    tokensCacheWrite1h: trace.tokensCacheWrite1h,
    tokensAudioIn: trace.tokensAudioIn,
    tokensAudioOut: trace.tokensAudioOut,
    webSearchRequests: trace.webSearchRequests,
    serviceTier: trace.serviceTier,
  };
  const { serverCostUsd, priceCheck } = serverPricing(TraceSource.API, trace.costUsd!, projectCost(book, usage, at));
  return {
    source: TraceSource.API,
    priceCheck,
    ...(serverCostUsd === undefined ? {} : { serverCostUsd }),
    otlpTraceId: "",
    otlpSpanId: "",
    otlpParentSpanId: "",
    serviceName: "",
  };
}

/** Who sent a trace, from where and when: what the server adds to the contract's fields. */
export interface Receipt {
  keyId: string;
  accountId: string;
  country: string;
  receivedAtMs: number;
}

/**
 * The server's record of a trace. A literal rather than create(): the type still demands every
 * field of the contract, and the hot path skips the reflection. The numbers are present:
 * validation requires them.
 */
export function storedTraceOf(trace: Trace, receipt: Receipt, origin: TraceOrigin): StoredTrace {
  return {
    $typeName: "calltrace.v1.StoredTrace",
    id: "",
    receivedAt: timestampFromMs(receipt.receivedAtMs),
    keyId: receipt.keyId,
    accountId: receipt.accountId,
    country: receipt.country,
    provider: trace.provider,
    model: trace.model,
    tokensIn: trace.tokensIn!,
    tokensOut: trace.tokensOut!,
    latencyMs: trace.latencyMs!,
    costUsd: trace.costUsd!,
    status: trace.status,
    ...(trace.error === undefined ? {} : { error: trace.error }),
    ...(trace.tokensCachedIn === undefined ? {} : { tokensCachedIn: trace.tokensCachedIn }),
    ...(trace.tokensCacheWrite === undefined ? {} : { tokensCacheWrite: trace.tokensCacheWrite }),
    ...(trace.tokensReasoning === undefined ? {} : { tokensReasoning: trace.tokensReasoning }),
    ...(trace.userId === undefined ? {} : { userId: trace.userId }),
    ...(trace.sessionId === undefined ? {} : { sessionId: trace.sessionId }),
    tags: trace.tags,
    metadata: trace.metadata,
    ...(trace.environment === undefined ? {} : { environment: trace.environment }),
    ...(trace.ttftMs === undefined ? {} : { ttftMs: trace.ttftMs }),
    ...(trace.serviceTier === undefined ? {} : { serviceTier: trace.serviceTier }),
    ...(trace.tokensCacheWrite1h === undefined ? {} : { tokensCacheWrite1h: trace.tokensCacheWrite1h }),
    ...(trace.tokensAudioIn === undefined ? {} : { tokensAudioIn: trace.tokensAudioIn }),
    ...(trace.tokensAudioOut === undefined ? {} : { tokensAudioOut: trace.tokensAudioOut }),
    ...(trace.webSearchRequests === undefined ? {} : { webSearchRequests: trace.webSearchRequests }),
    ...(trace.calledAt === undefined ? {} : { calledAt: trace.calledAt }),
    ...origin,
  };
}
