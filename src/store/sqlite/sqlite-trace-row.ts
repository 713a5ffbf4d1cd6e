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

export function traceToRow(trace: StoredTrace): Omit<TraceRow, "seq"> {
  return {
    received_at: timestampMs(trace.receivedAt!),
    key_id: trace.keyId,
    account_id: trace.accountId,
    country: trace.country,
    provider: trace.provider,
    model: trace.model,
    tokens_in: trace.tokensIn,
    tokens_out: trace.tokensOut,
    latency_ms: trace.latencyMs,
    cost_usd: trace.costUsd,
    status: trace.status,
    error: trace.error ?? null,
  };
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
