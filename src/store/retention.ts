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
