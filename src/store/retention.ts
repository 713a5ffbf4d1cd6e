/** How long traces are kept; shared by every store adapter. */
export interface RetentionOptions {
  /** Days a trace is kept after its receive time; 0 keeps traces forever. Default 90. */
  retentionDays?: number;
}

export const defaultRetentionDays = 90;

/** The retention period in milliseconds; 0 means forever. */
export function retentionMs(options: RetentionOptions): number {
  return (options.retentionDays ?? defaultRetentionDays) * 86_400_000;
}

/**
 * The earliest placement a read returns (ms since the epoch): the store's retention, or a
 * project's shorter one (`keptSinceMs`), whichever starts later; 0 where both keep everything.
 */
export function readCutoffMs(retentionMs: number, keptSinceMs: number | undefined, now = Date.now()): number {
  return Math.max(retentionMs > 0 ? now - retentionMs : 0, keptSinceMs ?? 0);
}
