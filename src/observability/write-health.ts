import type { Logger } from "../log/logger.js";

/** Failed writes are logged at most this often (a full disk fails every write). */
const logEveryMs = 10_000;
/**
 * How long after the last failed write, with none succeeding since, the instance reports itself
 * not ready. It then reports ready again, so that a load balancer sends it a write that shows
 * whether the store has recovered (it has no other way to find out when nothing is written).
 */
const unreadyForMs = 30_000;

/** Whether the store takes writes, as the writes themselves tell: for readiness, and logged. */
export interface WriteHealth {
  succeeded(): void;
  failed(error: Error): void;
  /** Why the instance should not be sent traffic now, or undefined. */
  problem(): string | undefined;
}

export function watchWriteHealth(logger: Logger, now: () => number = Date.now): WriteHealth {
  let lastFailure = 0;
  let lastError = "";
  let lastSuccess = 0;
  let lastLogged = 0;
  let unlogged = 0;
  return {
    succeeded() {
      if (lastFailure > lastSuccess) logger.info({ failedWrites: unlogged }, "store writes succeed again");
      lastSuccess = now();
      unlogged = 0;
    },
    failed(error) {
      lastFailure = now();
      lastError = error.message;
      unlogged++;
      if (lastFailure - lastLogged < logEveryMs) return;
      logger.error({ err: error, failedWrites: unlogged }, "store write failed");
      lastLogged = lastFailure;
      unlogged = 0;
    },
    problem() {
      return lastFailure > lastSuccess && now() - lastFailure < unreadyForMs ? `store writes are failing: ${lastError}` : undefined;
    },
  };
}
