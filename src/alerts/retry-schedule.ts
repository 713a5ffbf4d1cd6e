/**
 * When a delivery is attempted, after the first: 0 s, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h
 * (about 27 hours in all), in units of the base (5 s; ALERT_RETRY_BASE_MS shortens it in tests).
 */
const delaysInBaseUnits = [0, 1, 60, 360, 1440, 3600, 7200, 7200];
export const defaultRetryBaseMs = 5000;

/** How many scheduled attempts a delivery gets before it fails for good. */
export const scheduledAttempts = delaysInBaseUnits.length;

/**
 * The wait before the next attempt once `made` scheduled attempts have failed; undefined when
 * the schedule is over.
 */
export function retryDelayMs(made: number, baseMs: number): number | undefined {
  const units = delaysInBaseUnits[made];
  return units === undefined ? undefined : units * baseMs;
}

/** Whether a failed attempt is worth repeating: timeouts, network errors, 5xx and 429; any other answer is final. */
export function isRetryable(responseCode: number): boolean {
  return responseCode === 0 || responseCode === 429 || responseCode >= 500;
}
