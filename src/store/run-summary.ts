import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { RunSummarySchema, type RunSummary } from "../../gen/calltrace/v1/query_pb.js";
import type { StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";

/** Sums over a run's calls, as an adapter reads them. */
export interface RunCell {
  id: string;
  calls: number;
  errors: number;
  costUsd: number;
  tokensIn: number;
  tokensOut: number;
  startMs: number;
  endMs: number;
}

/** How runs are listed: most recently ended first, or highest cost first. */
export type RunOrder = "recent" | "cost";

/**
 * Where a page of runs, most recently ended first, stopped: its last run's end and id. The next
 * page holds the runs after it in that order (keyset pagination, as trace-cursor.ts pages traces).
 */
export interface RunsAfter {
  endMs: number;
  id: string;
}

/** Whether a run comes after `after` when runs are listed most recently ended first. */
export function runIsAfter(cell: Pick<RunCell, "id" | "endMs">, after: RunsAfter | undefined): boolean {
  return after === undefined || cell.endMs < after.endMs || (cell.endMs === after.endMs && cell.id > after.id);
}

/** One run and its calls (earliest start first, at most maxRunCalls). */
export interface RunDetail {
  run: RunSummary;
  calls: StoredTrace[];
  truncated: boolean;
}

export function runSummary(cell: RunCell): RunSummary {
  return create(RunSummarySchema, {
    id: cell.id,
    calls: BigInt(cell.calls),
    errors: BigInt(cell.errors),
    costUsd: cell.costUsd,
    tokensIn: BigInt(cell.tokensIn),
    tokensOut: BigInt(cell.tokensOut),
    start: timestampFromMs(cell.startMs),
    end: timestampFromMs(cell.endMs),
  });
}

/** Runs in the order asked for; ties by id, so pages of equal figures stay stable. */
export function sortRuns(cells: RunCell[], order: RunOrder): RunCell[] {
  return cells.sort((a, b) => (order === "cost" ? b.costUsd - a.costUsd : b.endMs - a.endMs) || byId(a, b));
}

/** Most recently ended first, ties by id: sortRuns's `recent` order, for runs known by their span alone. */
export function endedLaterFirst(a: Pick<RunCell, "id" | "endMs">, b: Pick<RunCell, "id" | "endMs">): number {
  return b.endMs - a.endMs || byId(a, b);
}

function byId(a: Pick<RunCell, "id">, b: Pick<RunCell, "id">): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
