import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { FieldProblem } from "./trace-validation.js";

/** How far ahead of the server's clock a call time may be: client clocks drift (D58). */
export const maxCallTimeAheadMs = 5 * 60_000;

const dayMs = 86_400_000;

/**
 * Days a project's traces are kept: the shorter of RETENTION_DAYS and the project's own
 * retention, where either is set (0 or undefined: forever).
 */
export function keptDays(retentionDays: number, projectRetentionDays: number | undefined): number {
  const limits = [retentionDays, projectRetentionDays ?? 0].filter((days) => days > 0);
  return limits.length === 0 ? 0 : Math.min(...limits);
}

/**
 * Why a call time cannot be accepted at `nowMs` (D58): more than 5 minutes ahead, or older than
 * the traces the project keeps (it would be swept at once, and its roll-up days are gone), or
 * before 1970 when the project keeps traces forever. Undefined when it is within bounds.
 */
export function callTimeProblem(calledAtMs: number, nowMs: number, keepDays: number, field = "called_at"): FieldProblem | undefined {
  if (!Number.isFinite(calledAtMs)) return { field, problem: "must be a valid RFC 3339 timestamp" };
  if (calledAtMs > nowMs + maxCallTimeAheadMs) {
    return { field, problem: `must not be more than ${maxCallTimeAheadMs / 60_000} minutes ahead of the server's clock (${iso(nowMs)})` };
  }
  const oldest = keepDays > 0 ? nowMs - keepDays * dayMs : 0;
  if (calledAtMs < oldest) {
    const kept = keepDays > 0 ? `the project keeps traces for ${keepDays} days` : "traces are kept forever";
    return { field, problem: `must not be before ${iso(oldest)} (${kept})` };
  }
  return undefined;
}

/** A Timestamp in milliseconds, or NaN where it is not a valid one (nanos out of range, or past year 9999). */
export function timestampMsChecked(timestamp: Timestamp): number {
  const ms = Number(timestamp.seconds) * 1000 + Math.floor(timestamp.nanos / 1e6);
  const valid = timestamp.nanos >= 0 && timestamp.nanos <= 999_999_999 && ms >= -62_135_596_800_000 && ms <= 253_402_300_799_999;
  return valid ? ms : Number.NaN;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
