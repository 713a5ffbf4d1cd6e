import { latencyBucket } from "./latency-bucket.js";
import { type CellResolution, type CountedCall, keepMinuteMs, keepQuarterMs, minuteMs, quarterMs, type ScopeCell } from "./scope-counters.js";
import { callScopeKeys } from "./scope-keys.js";

export interface TalliedCell extends ScopeCell {
  scope: string;
  resolution: CellResolution;
}

export interface TalliedLatency {
  scope: string;
  start: number;
  bucket: number;
  calls: number;
}

/** A batch's (or a back-fill's) calls summed into cells: one upsert per cell, not per call. */
export interface ScopeTally {
  cells: TalliedCell[];
  latency: TalliedLatency[];
}

/**
 * Sums calls into the cells of the scopes `watched` says count that call: a quarter-hour and a minute
 * cell each, and a minute latency cell. With `nowMs`, cells older than their keep are left out
 * (a back-fill); the writer's calls are recent. `atMs` is the time the roll-ups place a call at.
 */
export function tallyScopeCells<T extends { atMs: number; call: CountedCall }>(
  calls: Iterable<T>,
  watched: (scope: string, item: T) => boolean,
  nowMs?: number,
): ScopeTally {
  const cells = new Map<string, TalliedCell>();
  const latency = new Map<string, TalliedLatency>();
  for (const item of calls) {
    const { atMs, call } = item;
    const keepQuarter = nowMs === undefined || atMs >= nowMs - keepQuarterMs;
    const keepMinute = nowMs === undefined || atMs >= nowMs - keepMinuteMs;
    if (!keepQuarter) continue;
    const bucket = latencyBucket(call.latencyMs);
    for (const scope of callScopeKeys(call)) {
      if (!watched(scope, item)) continue;
      for (const resolution of keepMinute ? [quarterMs, minuteMs] : [quarterMs]) {
        const start = Math.floor(atMs / resolution) * resolution;
        const id = `${resolution} ${start} ${scope}`;
        let cell = cells.get(id);
        if (!cell) cells.set(id, (cell = { scope, resolution: resolution as CellResolution, start, calls: 0, errors: 0, costUsd: 0, unpriced: 0 }));
        cell.calls += 1;
        if (call.status === "error") cell.errors += 1;
        cell.costUsd += call.costUsd;
        if (call.unpriced) cell.unpriced += 1;
      }
      if (!keepMinute) continue;
      const start = Math.floor(atMs / minuteMs) * minuteMs;
      const id = `${start} ${bucket} ${scope}`;
      const cell = latency.get(id);
      if (cell) cell.calls += 1;
      else latency.set(id, { scope, start, bucket, calls: 1 });
    }
  }
  return { cells: [...cells.values()], latency: [...latency.values()] };
}
