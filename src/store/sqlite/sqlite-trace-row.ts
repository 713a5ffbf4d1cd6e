import { create } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { StoredTraceSchema, type StoredTrace } from "../../../gen/calltrace/v1/trace_pb.js";

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
] as const satisfies readonly (keyof TraceRow)[];

export function traceToValues(trace: StoredTrace): TraceValues {
  return [
    timestampMs(trace.receivedAt!),
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
  ];
}

/** The stored trace of a row; its id is the row's sequence number. */
export function traceFromRow(row: TraceRow): StoredTrace {
  return create(StoredTraceSchema, {
    id: String(row.seq),
    receivedAt: timestampFromMs(row.received_at),
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
    ...(row.error === null ? {} : { error: row.error }),
  });
}
