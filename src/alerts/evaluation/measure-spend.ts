import { quarterMs, type ScopeCounters } from "../../store/scope-counters.js";
import type { WindowBounds } from "./alert-window.js";

/**
 * A scope's spend in USD over a window, summed from its quarter-hour cells (the window's bounds
 * are quarter hours, alert-window.ts: its last cell is the one now falls in).
 */
export async function measureSpend(counters: ScopeCounters, projectId: string, scope: string, window: WindowBounds): Promise<number> {
  const cells = await counters.cells(projectId, scope, quarterMs, window.startMs, window.endMs);
  return cells.reduce((sum, cell) => sum + cell.costUsd, 0);
}
