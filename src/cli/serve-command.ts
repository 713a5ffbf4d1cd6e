import { parseCommandArgs, resolveConfig } from "../config/config.js";
import { startService } from "../app.js";
import { createLogger } from "../log/logger.js";

/** `calltrace serve`: runs until SIGTERM or SIGINT, then shuts down gracefully (nothing accepted is lost). */
export async function serveCommand(argv: string[]): Promise<void> {
  const { values } = parseCommandArgs(argv, { "shutdown-grace-ms": { type: "string" } });
  const config = resolveConfig(values);
  const logger = createLogger(config.logLevel);
  const service = await startService(config, logger);
  const graceMs = Number(values["shutdown-grace-ms"] ?? process.env.SHUTDOWN_GRACE_MS ?? 10_000);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
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
