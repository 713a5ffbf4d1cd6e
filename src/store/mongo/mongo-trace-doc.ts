import { create } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import type { ObjectId } from "mongodb";
import { StoredTraceSchema, type StoredTrace } from "../../../gen/calltrace/v1/trace_pb.js";
import { latencyBucket } from "../latency-bucket.js";

/**
 * A trace in the traces collection. `meta` is the time-series meta field: traces of one key,
 * account, provider, model and status share buckets, so per-key and per-model reads touch one
 * bucket family. `day` and `latencyBucket` are derived when written, because FerretDB's
 * aggregation has neither $dateTrunc nor arithmetic: grouping by a stored field works everywhere.
 */
export interface TraceDoc {
  _id: ObjectId;
  receivedAt: Date;
  meta: { accountId: string; keyId: string; provider: string; model: string; status: string };
  country: string;
  tokensIn: number;
  tokensOut: number;
  latencyMs: number;
  costUsd: number;
  error?: string;
  /** UTC day, YYYY-MM-DD. */
  day: string;
  latencyBucket: number;
}

export function traceToDoc(trace: StoredTrace, id: ObjectId): TraceDoc {
  const receivedAt = new Date(timestampMs(trace.receivedAt!));
  return {
    _id: id,
    receivedAt,
    meta: { accountId: trace.accountId, keyId: trace.keyId, provider: trace.provider, model: trace.model, status: trace.status },
    country: trace.country,
    tokensIn: trace.tokensIn,
    tokensOut: trace.tokensOut,
    latencyMs: trace.latencyMs,
    costUsd: trace.costUsd,
    ...(trace.error === undefined ? {} : { error: trace.error }),
    day: receivedAt.toISOString().slice(0, 10),
    latencyBucket: latencyBucket(trace.latencyMs),
  };
}

export function traceFromDoc(doc: TraceDoc): StoredTrace {
  return create(StoredTraceSchema, {
    id: doc._id.toHexString(),
    receivedAt: timestampFromMs(doc.receivedAt.getTime()),
    keyId: doc.meta.keyId,
    accountId: doc.meta.accountId,
    country: doc.country,
    provider: doc.meta.provider,
    model: doc.meta.model,
    tokensIn: doc.tokensIn,
    tokensOut: doc.tokensOut,
    latencyMs: doc.latencyMs,
    costUsd: doc.costUsd,
    status: doc.meta.status,
    ...(doc.error === undefined || doc.error === null ? {} : { error: doc.error }),
  });
}
