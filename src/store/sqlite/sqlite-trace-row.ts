import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { StoredTraceSchema, type StoredTrace, TraceSource } from "../../../gen/calltrace/v1/trace_pb.js";
import type { TraceWrite } from "../trace-store.js";
import { arrivedAtMs, placedAtMs } from "../trace-time.js";
import { idOf } from "./sqlite-id-numbers.js";

/** A row of the traces table. */
export interface TraceRow {
  seq: number;
  received_at: number;
  key_id: string;
  account_id: string;
  country: string;
  provider: string;
  model: string;
  tokens_in: number;
  tokens_out: number;
  latency_ms: number;
  cost_usd: number;
  status: string;
  error: string | null;
  tokens_cached_in: number | null;
  tokens_cache_write: number | null;
  tokens_reasoning: number | null;
  server_cost_usd: number | null;
  price_check: number;
  source: number;
  otlp_trace_id: string | null;
  otlp_span_id: string | null;
  otlp_parent_span_id: string | null;
  service_name: string | null;
  user_id: string | null;
  session_id: string | null;
  /** JSON array of strings, or null when there are none. */
  tags: string | null;
  /** JSON object of strings, or null when there are none. */
  metadata: string | null;
  environment: string | null;
  ttft_ms: number | null;
  /** An OTLP call's idempotency key, unique per account (D37) and start second (D44); null for other traces. */
  otlp_call_key: string | null;
  /** An OTLP call's span start in whole seconds since the epoch (D44); null for other traces and calls stored before. */
  otlp_start_s: number | null;
  service_tier: string | null;
  tokens_cache_write_1h: number | null;
  tokens_audio_in: number | null;
  tokens_audio_out: number | null;
  web_search_requests: number | null;
  /** When a trace that carries its call time was received (D58); null for others, whose received_at is their receipt. */
  arrived_at: number | null;
  /** A failed call's error group (src/store/error-group.ts), or `otherValue` past the day's cap; null for other traces. */
  error_group: string | null;
  /** An imported trace's identity in its file, unique per project; null for others. */
  import_key: string | null;
}

/**
 * A new row's values in `traceColumns` order: how traces travel to the writer thread (an array
 * of primitives costs the event loop a fraction of what cloning the message object does).
 */
export type TraceValues = [
  received_at: number,
  key_id: string,
  account_id: string,
  country: string,
  provider: string,
  model: string,
  tokens_in: number,
  tokens_out: number,
  latency_ms: number,
  cost_usd: number,
  status: string,
  error: string | null,
  tokens_cached_in: number | null,
  tokens_cache_write: number | null,
  tokens_reasoning: number | null,
  server_cost_usd: number | null,
  price_check: number,
  source: number,
  otlp_trace_id: string | null,
  otlp_span_id: string | null,
  otlp_parent_span_id: string | null,
  service_name: string | null,
  user_id: string | null,
  session_id: string | null,
  tags: string | null,
  metadata: string | null,
  environment: string | null,
  ttft_ms: number | null,
  otlp_call_key: string | null,
  otlp_start_s: number | null,
  service_tier: string | null,
  tokens_cache_write_1h: number | null,
  tokens_audio_in: number | null,
  tokens_audio_out: number | null,
  web_search_requests: number | null,
  arrived_at: number | null,
  error_group: string | null,
  import_key: string | null,
];

export const traceColumns = [
  "received_at",
  "key_id",
  "account_id",
  "country",
  "provider",
  "model",
  "tokens_in",
  "tokens_out",
  "latency_ms",
  "cost_usd",
  "status",
  "error",
  "tokens_cached_in",
  "tokens_cache_write",
  "tokens_reasoning",
  "server_cost_usd",
  "price_check",
  "source",
  "otlp_trace_id",
  "otlp_span_id",
  "otlp_parent_span_id",
  "service_name",
  "user_id",
  "session_id",
  "tags",
  "metadata",
  "environment",
  "ttft_ms",
  "otlp_call_key",
  "otlp_start_s",
  "service_tier",
  "tokens_cache_write_1h",
  "tokens_audio_in",
  "tokens_audio_out",
  "web_search_requests",
  "arrived_at",
  "error_group",
  "import_key",
] as const satisfies readonly (keyof TraceRow)[];

/**
 * The traces table's columns of `traceColumns`, in the same order: a project, a key, a provider and
 * a model are stored as their numbers (D65, D68), a status as whether the call failed (D68).
 */
const storedAs: Partial<Record<(typeof traceColumns)[number], string>> = {
  account_id: "project_num",
  key_id: "key_num",
  provider: "provider_num",
  model: "model_num",
  status: "failed",
};
export const storedTraceColumns = traceColumns.map((c) => storedAs[c] ?? c);

/** Where in TraceValues the writer puts the numbers of these ids. */
export const numberedIndexes = (["key_id", "account_id", "provider", "model"] as const).map((c) => traceColumns.indexOf(c));

/** The columns kept as SQLite's binary JSON (D65): written through jsonb(), read through json(). */
const jsonbColumns: readonly string[] = ["tags", "metadata"];

/** SQL placeholders for a row's `storedTraceColumns`: the JSON columns' text made binary, the status a flag. */
export const storedTraceValuesSql = traceColumns
  .map((c) => (jsonbColumns.includes(c) ? "jsonb(?)" : c === "status" ? "? = 'error'" : "?"))
  .join(", ");

/**
 * SQL selecting a TraceRow: the row's columns, with the ids of its numbers and the JSON as text
 * (the table's virtual `status` column reads the flag as text).
 */
export const traceRowSql = `seq, ${traceColumns
  .map((c) => {
    const stored = storedAs[c];
    if (stored !== undefined && c !== "status") return `${idOf(stored)} AS ${c}`;
    return jsonbColumns.includes(c) ? `json(${c}) AS ${c}` : c;
  })
  .join(", ")}`;

/**
 * The row of a write. An OTLP call's idempotency key goes into the row, whose unique index makes a
 * repeat store nothing (D37); any other write's key is claimed in the idempotency table (D22).
 */
export function writeToRow({ trace, idempotencyKey, otlpStartS, importKey }: TraceWrite): { values: TraceValues; claimKey: string | null } {
  const otlpCallKey = trace.source === TraceSource.OTLP ? (idempotencyKey ?? null) : null;
  const startS = otlpCallKey === null ? null : (otlpStartS ?? 0);
  return { values: traceToValues(trace, otlpCallKey, startS, importKey ?? null), claimKey: otlpCallKey === null ? (idempotencyKey ?? null) : null };
}

function traceToValues(trace: StoredTrace, otlpCallKey: string | null, otlpStartS: number | null, importKey: string | null): TraceValues {
  return [
    placedAtMs(trace),
    trace.keyId,
    trace.accountId,
    trace.country,
    trace.provider,
    trace.model,
    trace.tokensIn,
    trace.tokensOut,
    trace.latencyMs,
    trace.costUsd,
    trace.status,
    trace.error ?? null,
    trace.tokensCachedIn ?? null,
    trace.tokensCacheWrite ?? null,
    trace.tokensReasoning ?? null,
    trace.serverCostUsd ?? null,
    trace.priceCheck,
    trace.source,
    trace.otlpTraceId || null,
    trace.otlpSpanId || null,
    trace.otlpParentSpanId || null,
    trace.serviceName || null,
    trace.userId ?? null,
    trace.sessionId ?? null,
    trace.tags.length === 0 ? null : JSON.stringify(trace.tags),
    isEmpty(trace.metadata) ? null : JSON.stringify(trace.metadata),
    trace.environment ?? null,
    trace.ttftMs ?? null,
    otlpCallKey,
    otlpStartS,
    trace.serviceTier ?? null,
    trace.tokensCacheWrite1h ?? null,
    trace.tokensAudioIn ?? null,
    trace.tokensAudioOut ?? null,
    trace.webSearchRequests ?? null,
    arrivedAtMs(trace) ?? null,
    // Set by the writer, which knows the day's groups (sqlite-error-rollup.ts).
    null,
    importKey,
  ];
}

/** The stored trace of a row, with its id as shown (the row number encrypted, src/store/trace-id.ts). */
export function traceFromRow(row: TraceRow, id: string): StoredTrace {
  return create(StoredTraceSchema, {
    id,
    // received_at is where the trace is placed: its call time when it arrived with one (D58).
    receivedAt: timestampFromMs(row.arrived_at ?? row.received_at),
    ...(row.arrived_at === null ? {} : { calledAt: timestampFromMs(row.received_at) }),
    keyId: row.key_id,
    accountId: row.account_id,
    country: row.country,
    provider: row.provider,
    model: row.model,
    tokensIn: row.tokens_in,
    tokensOut: row.tokens_out,
    latencyMs: row.latency_ms,
    costUsd: row.cost_usd,
    status: row.status,
    error: row.error ?? undefined,
    tokensCachedIn: row.tokens_cached_in ?? undefined,
    tokensCacheWrite: row.tokens_cache_write ?? undefined,
    tokensReasoning: row.tokens_reasoning ?? undefined,
    serverCostUsd: row.server_cost_usd ?? undefined,
    priceCheck: row.price_check,
    source: row.source,
    otlpTraceId: row.otlp_trace_id ?? "",
    otlpSpanId: row.otlp_span_id ?? "",
    otlpParentSpanId: row.otlp_parent_span_id ?? "",
    serviceName: row.service_name ?? "",
    userId: row.user_id ?? undefined,
    sessionId: row.session_id ?? undefined,
    tags: row.tags === null ? [] : (JSON.parse(row.tags) as string[]),
    metadata: row.metadata === null ? {} : (JSON.parse(row.metadata) as Record<string, string>),
    environment: row.environment ?? undefined,
    ttftMs: row.ttft_ms ?? undefined,
    serviceTier: row.service_tier ?? undefined,
    tokensCacheWrite1h: row.tokens_cache_write_1h ?? undefined,
    tokensAudioIn: row.tokens_audio_in ?? undefined,
    tokensAudioOut: row.tokens_audio_out ?? undefined,
    webSearchRequests: row.web_search_requests ?? undefined,
  });
}

function isEmpty(map: Record<string, string>): boolean {
  for (const _ in map) return false;
  return true;
}

/** Where in TraceValues the writer reads and sets these columns. */
export const arrivedAtIndex = traceColumns.indexOf("arrived_at");
export const errorGroupIndex = traceColumns.indexOf("error_group");
