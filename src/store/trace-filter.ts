import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { TraceFilter } from "../../gen/calltrace/v1/query_pb.js";
import { storedErrorGroup } from "./error-groups-fold.js";

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
  userId: string | undefined;
  sessionId: string | undefined;
  /** Every one must be on the trace; empty when not filtered. */
  tags: string[];
  /** Every entry must be in the trace's metadata; empty when not filtered. */
  metadata: [key: string, value: string][];
  environment: string | undefined;
  /** The OTLP service name, or else the metadata entry `service`. */
  service: string | undefined;
  /** Case-insensitive substrings. */
  modelContains: string | undefined;
  errorContains: string | undefined;
  otlpTraceId: string | undefined;
  /** The stored error group (error-groups-fold.ts's storedErrorGroup). */
  errorGroup: string | undefined;
}

/** The filter fields the daily roll-ups of key, provider, model and status cannot answer. */
export function filtersAttributes(filter: ResolvedTraceFilter): boolean {
  return (
    filter.userId !== undefined ||
    filter.sessionId !== undefined ||
    filter.tags.length > 0 ||
    filter.metadata.length > 0 ||
    filter.environment !== undefined ||
    filter.service !== undefined ||
    filter.modelContains !== undefined ||
    filter.errorContains !== undefined ||
    filter.otlpTraceId !== undefined ||
    filter.errorGroup !== undefined
  );
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
    userId: filter.userId || undefined,
    sessionId: filter.sessionId || undefined,
    tags: [...new Set(filter.tags)],
    metadata: Object.entries(filter.metadata).sort(([a], [b]) => (a < b ? -1 : 1)),
    environment: filter.environment || undefined,
    service: filter.service || undefined,
    modelContains: filter.modelContains || undefined,
    errorContains: filter.errorContains || undefined,
    otlpTraceId: filter.otlpTraceId || undefined,
    errorGroup: filter.errorGroup ? storedErrorGroup(filter.errorGroup) : undefined,
  };
}
