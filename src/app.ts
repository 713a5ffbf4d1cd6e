import { readFileSync } from "node:fs";
import { createKeyVerifier } from "./auth/key-verifier.js";
import type { Config } from "./config/config.js";
import { createDashboard } from "./dashboard/dashboard.js";
import { loadPlans } from "./config/plans.js";
import { openCountryLookup } from "./geo/country-lookup.js";
import { BatchingWriter } from "./ingest/batching-writer.js";
import { createIngestPipeline } from "./ingest/ingest-pipeline.js";
import { openLimits } from "./limits/open-limits.js";
import type { Logger } from "./log/logger.js";
import { connectionLimits } from "./server/connection-limits.js";
import { listen } from "./server/listen.js";
import { createRequestHandler } from "./server/request-handler.js";
import { openStore } from "./store/open-store.js";

export interface RunningService {
  port: number;
  url: string;
  /** Stops accepting, answers what is in flight, commits every queued trace, then closes the store. */
  close(graceMs?: number): Promise<void>;
}

/** Wires the configured stores, limiters and protocol edges together and starts listening. */
export async function startService(config: Config, logger: Logger): Promise<RunningService> {
  const plans = loadPlans(config.plansFile);
  const store = await openStore(config, logger);
  const writer = new BatchingWriter(store, {
    maxBatch: config.writerMaxBatch,
    maxQueue: config.writerMaxQueue,
    maxWaitMs: config.writerMaxWaitMs,
    timeoutMs: config.writeTimeoutMs,
  });
  const limits = openLimits(config, store, logger);
  const pipeline = createIngestPipeline({
    verifier: createKeyVerifier(store.keys),
    limiter: limits.limiter,
    authFailures: limits.authFailures,
    quota: limits.quota,
    plans,
    writer,
    countryOf: openCountryLookup(),
  });
  const handler = createRequestHandler({
    pipeline,
    ready: async (): Promise<Record<string, string>> => {
      await store.ping();
      const degraded = limits.degradation();
      return degraded ? { limits: degraded } : {};
    },
    maxBodyBytes: config.maxBodyBytes,
    trustProxy: config.trustProxy,
    logger,
    dashboard: createDashboard({
      keys: store.keys,
      users: store.users,
      reader: store,
      plans,
      signupOpen: config.signupOpen,
      sessionTtlSeconds: config.sessionTtl,
      trustProxy: config.trustProxy,
      logger,
    }),
  });
  const tls =
    config.tlsCertFile && config.tlsKeyFile
      ? { cert: readFileSync(config.tlsCertFile), key: readFileSync(config.tlsKeyFile) }
      : undefined;
  const listener = await listen(handler, { port: config.port, host: config.host, ...(tls ? { tls } : {}), limits: connectionLimits(config) });
  logger.info({ port: listener.port, url: listener.url, store: config.mongodbUri ? "mongodb" : "embedded" }, "listening");

  return {
    port: listener.port,
    url: listener.url,
    async close(graceMs) {
      await listener.close(graceMs);
      await writer.drain();
      logger.info({ ...writer.stats }, "writer drained");
      await limits.close();
      await store.close();
    },
  };
}
