import { bucketPercentile } from "../../store/latency-bucket.js";
import { minuteMs, type ScopeCounters } from "../../store/scope-counters.js";
import type { WindowBounds } from "./alert-window.js";

/** A scope's calls over its trailing minutes: what the error and latency rules compare. */
export interface TrailingMeasure {
  window: WindowBounds;
  calls: number;
  errors: number;
  /** errors / calls in percent; 0 without calls. */
  errorRatePercent: number;
  /** Nearest-rank p95 over the latency buckets (at most 5 % above the true value, latency-bucket.ts); 0 without calls. */
  p95LatencyMs: number;
}

/** The last `minutes` minutes, the current one included, from the minute cells. */
export async function measureTrailing(
  counters: ScopeCounters,
  projectId: string,
  scope: string,
  minutes: number,
  nowMs: number,
): Promise<TrailingMeasure> {
  const window = { startMs: Math.floor(nowMs / minuteMs) * minuteMs - (Math.max(1, minutes) - 1) * minuteMs, endMs: nowMs };
  const to = Math.floor(nowMs / minuteMs) * minuteMs + 1;
  const [cells, latency] = await Promise.all([
    counters.cells(projectId, scope, minuteMs, window.startMs, to),
    counters.latency(projectId, scope, window.startMs, to),
  ]);
  const calls = cells.reduce((sum, c) => sum + c.calls, 0);
  const errors = cells.reduce((sum, c) => sum + c.errors, 0);
  return {
    window,
    calls,
    errors,
    errorRatePercent: calls === 0 ? 0 : (100 * errors) / calls,
    p95LatencyMs: bucketPercentile(latency, 0.95),
  };
}
