import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { ObjectId } from "mongodb";
import { StoredTraceSchema, type StoredTrace } from "../../../gen/calltrace/v1/trace_pb.js";
import { latencyBucket } from "../latency-bucket.js";
import { traceIdCodec } from "../trace-id.js";
import { arrivedAtMs, placedAtMs } from "../trace-time.js";

/**
 * A trace in the traces collection. `meta` is the time-series meta field: traces of one key,
 * account, provider, model and status share buckets, so per-key and per-model reads touch one
 * bucket family. `day` and `latencyBucket` are derived when written, because FerretDB's
 * aggregation has neither $dateTrunc nor arithmetic: grouping by a stored field works everywhere.
 */
export interface TraceDoc {
  _id: ObjectId;
  /** Where the trace is placed (D58): its call time when it carries one, else its receipt. */
  receivedAt: Date;
  /** When a trace that carries its call time was received; absent for others. */
  arrivedAt?: Date;
  meta: { accountId: string; keyId: string; provider: string; model: string; status: string };
  country: string;
  tokensIn: number;
  tokensOut: number;
  latencyMs: number;
  costUsd: number;
  error?: string;
  tokensCachedIn?: number;
  tokensCacheWrite?: number;
  tokensReasoning?: number;
  serverCostUsd?: number;
  /** PriceCheck and TraceSource as their numbers; absent (0) on traces stored before them. */
  priceCheck?: number;
  source?: number;
  otlpTraceId?: string;
  otlpSpanId?: string;
  otlpParentSpanId?: string;
  serviceName?: string;
  userId?: string;
  sessionId?: string;
  tags?: string[];
  /** Metadata as key-value pairs, so that one index serves a filter on any key (a map's keys are not indexable). */
  metadata?: { k: string; v: string }[];
  environment?: string;
  ttftMs?: number;
  serviceTier?: string;
  tokensCacheWrite1h?: number;
  tokensAudioIn?: number;
  tokensAudioOut?: number;
  webSearchRequests?: number;
  /** UTC day, YYYY-MM-DD. */
  day: string;
  latencyBucket: number;
  /** tokensIn + tokensOut, what pages sorted by tokens sort by (FerretDB cannot sort by a sum). */
  tokens?: number;
  /**
   * The metadata again as `key=value` strings (keys cannot hold `=`): what filters and groups on
   * one entry match, since FerretDB 1.24 matches neither a whole {k, v} element nor $elemMatch.
   */
  metadataPairs?: string[];
  /** Where the trace counts under the other value of a dimension (D54); absent when it counts as itself everywhere. */
  capped?: CappedGroups;
}

/**
 * How a trace counts in the groups of its values past a day's bound (mongo-value-bound.ts), kept
 * so a group-by reads it with $exists and equality alone (FerretDB 1.24 matches no negation on an
 * array). A dimension without its entry counts every value of the trace as itself.
 */
export interface CappedGroups {
  /** The single-valued dimensions the trace counts under other in. */
  user?: true;
  session?: true;
  environment?: true;
  service?: true;
  /** When a tag counts under other: the tags that count as themselves. */
  tags?: string[];
  /** When a metadata key counts under other: the keys that count as themselves... */
  keys?: string[];
  /** ...and those that do not, whose values count in no group of their key but the traces without it (none). */
  dropped?: string[];
  /** The keys whose value counts under other of that key. */
  otherValues?: string[];
  /** When a metadata value counts under other or in none: the `key=value` pairs that count as themselves. */
  pairs?: string[];
}

export function traceToDoc(trace: StoredTrace, id: ObjectId): TraceDoc {
  const receivedAt = new Date(placedAtMs(trace));
  const arrivedAt = arrivedAtMs(trace);
  return {
    _id: id,
    receivedAt,
    ...(arrivedAt === undefined ? {} : { arrivedAt: new Date(arrivedAt) }),
    meta: { accountId: trace.accountId, keyId: trace.keyId, provider: trace.provider, model: trace.model, status: trace.status },
    country: trace.country,
    tokensIn: trace.tokensIn,
    tokensOut: trace.tokensOut,
    latencyMs: trace.latencyMs,
    costUsd: trace.costUsd,
    ...(trace.error === undefined ? {} : { error: trace.error }),
    ...defined({
      tokensCachedIn: trace.tokensCachedIn,
      tokensCacheWrite: trace.tokensCacheWrite,
      tokensReasoning: trace.tokensReasoning,
      serverCostUsd: trace.serverCostUsd,
      priceCheck: trace.priceCheck || undefined,
      source: trace.source || undefined,
      otlpTraceId: trace.otlpTraceId || undefined,
      otlpSpanId: trace.otlpSpanId || undefined,
      otlpParentSpanId: trace.otlpParentSpanId || undefined,
      serviceName: trace.serviceName || undefined,
      userId: trace.userId,
      sessionId: trace.sessionId,
      tags: trace.tags.length === 0 ? undefined : trace.tags,
      metadata: pairsOf(trace.metadata),
      environment: trace.environment,
      ttftMs: trace.ttftMs,
      serviceTier: trace.serviceTier,
      tokensCacheWrite1h: trace.tokensCacheWrite1h,
      tokensAudioIn: trace.tokensAudioIn,
      tokensAudioOut: trace.tokensAudioOut,
      webSearchRequests: trace.webSearchRequests,
    }),
    day: receivedAt.toISOString().slice(0, 10),
    latencyBucket: latencyBucket(trace.latencyMs),
    tokens: trace.tokensIn + trace.tokensOut,
    ...defined({ metadataPairs: metadataPairs(trace.metadata) }),
  };
}

/** The stored trace of a document, with its id as shown (the ObjectId encrypted, src/store/trace-id.ts). */
export function traceFromDoc(doc: TraceDoc, id: string): StoredTrace {
  return create(StoredTraceSchema, {
    id,
    receivedAt: timestampFromMs((doc.arrivedAt ?? doc.receivedAt).getTime()),
    ...(doc.arrivedAt ? { calledAt: timestampFromMs(doc.receivedAt.getTime()) } : {}),
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
    tokensCachedIn: doc.tokensCachedIn,
    tokensCacheWrite: doc.tokensCacheWrite,
    tokensReasoning: doc.tokensReasoning,
    serverCostUsd: doc.serverCostUsd,
    priceCheck: doc.priceCheck ?? 0,
    source: doc.source ?? 0,
    otlpTraceId: doc.otlpTraceId ?? "",
    otlpSpanId: doc.otlpSpanId ?? "",
    otlpParentSpanId: doc.otlpParentSpanId ?? "",
    serviceName: doc.serviceName ?? "",
    userId: doc.userId,
    sessionId: doc.sessionId,
    tags: doc.tags ?? [],
    metadata: Object.fromEntries((doc.metadata ?? []).map(({ k, v }) => [k, v])),
    environment: doc.environment,
    ttftMs: doc.ttftMs,
    serviceTier: doc.serviceTier,
    tokensCacheWrite1h: doc.tokensCacheWrite1h,
    tokensAudioIn: doc.tokensAudioIn,
    tokensAudioOut: doc.tokensAudioOut,
    webSearchRequests: doc.webSearchRequests,
  });
}

/** The `key=value` strings of a trace's metadata (see TraceDoc.metadataPairs); undefined when it has none. */
export function metadataPairs(map: Record<string, string>): string[] | undefined {
  const pairs = Object.entries(map).map(([k, v]) => metadataPair(k, v));
  return pairs.length === 0 ? undefined : pairs;
}

export const metadataPair = (key: string, value: string) => `${key}=${value}`;

function pairsOf(map: Record<string, string>): { k: string; v: string }[] | undefined {
  const pairs = Object.entries(map).map(([k, v]) => ({ k, v }));
  return pairs.length === 0 ? undefined : pairs;
}

/** The entries whose value is set: a document holds no fields for what a trace does not carry. */
function defined<T extends Record<string, unknown>>(fields: T): Partial<T> {
  const out: Partial<T> = {};
  for (const name in fields) if (fields[name] !== undefined) out[name] = fields[name];
  return out;
}

/** MongoDB's trace ids: ObjectIds, encrypted as src/store/trace-id.ts explains. */
export function objectIdIds(key: Buffer) {
  const codec = traceIdCodec(key, 12);
  return {
    idOf: (objectId: ObjectId): string => codec.encode(Buffer.from(objectId.id)),
    /** The ObjectId inside an id, or undefined. */
    objectIdOf: (id: string): ObjectId | undefined => {
      const position = codec.decode(id);
      return position && new ObjectId(position);
    },
  };
}
