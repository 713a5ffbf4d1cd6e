import cluster from "node:cluster";
import { runClusterPrimary } from "../cluster/cluster-primary.js";
import { parseCommandArgs, resolveConfig } from "../config/config.js";
import { startService } from "../app.js";
import { createLogger } from "../log/logger.js";

/** Past SHUTDOWN_GRACE_MS, time to log and exit. */
const deadlineSlackMs = 500;

/**
 * `calltrace serve`: runs until SIGTERM or SIGINT, then shuts down gracefully (nothing accepted
 * is lost). With --workers N it is the primary of N worker processes, each running this too.
 */
export async function serveCommand(argv: string[]): Promise<void> {
  const { values } = parseCommandArgs(argv, {});
  const config = resolveConfig(values);
  const logger = createLogger(config.logLevel);
  if (config.workers > 1 && cluster.isPrimary) {
    runClusterPrimary(config, logger);
    return;
  }
  const service = await startService(config, logger);
  const graceMs = config.shutdownGraceMs;
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, graceMs }, "shutting down");
    // The deadline holds even if a store never answers. Whatever is cut off then was never
    // answered 202, since a 202 follows the commit (D13).
    setTimeout(() => {
      logger.error({ graceMs }, "shutdown deadline passed; exiting");
      process.exit(1);
    }, graceMs + deadlineSlackMs).unref();
    service.close(graceMs).then(
      () => {
        logger.info("stopped");
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}
