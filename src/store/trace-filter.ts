import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { TraceFilter } from "../../gen/calltrace/v1/query_pb.js";

/** The latest instant a JavaScript Date (and so a BSON date read back) can hold. */
const latestMs = 8_640_000_000_000_000;

/** A TraceFilter with the retention period applied and unset fields made explicit; what adapters query with. */
export interface ResolvedTraceFilter {
  /** Inclusive, never before the retention cut-off. */
  sinceMs: number;
  /** Exclusive. */
  untilMs: number;
  keyId: string | undefined;
  provider: string | undefined;
  model: string | undefined;
  status: string | undefined;
}

/**
 * Resolves a filter for one read. Traces older than the retention period are never read back,
 * even before the store (or MongoDB's TTL monitor, which runs once a minute) has deleted them.
 */
export function resolveTraceFilter(filter: TraceFilter, retentionMs: number, now = Date.now()): ResolvedTraceFilter {
  const cutoff = retentionMs > 0 ? now - retentionMs : 0;
  return {
    sinceMs: Math.max(filter.since ? timestampMs(filter.since) : 0, cutoff),
    untilMs: Math.min(filter.until ? timestampMs(filter.until) : latestMs, latestMs),
    keyId: filter.keyId || undefined,
    provider: filter.provider || undefined,
    model: filter.model || undefined,
    status: filter.status || undefined,
  };
}
