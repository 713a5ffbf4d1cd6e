import { readFileSync } from "node:fs";
import { createKeyVerifier } from "./auth/key-verifier.js";
import { budgetRoute } from "./budget/budget-route.js";
import { budgetStatusReader } from "./budget/budget-status.js";
import type { Config } from "./config/config.js";
import { createDashboard } from "./dashboard/dashboard.js";
import { loadPlans } from "./config/plans.js";
import { openCountryLookup } from "./geo/country-lookup.js";
import { BatchingWriter } from "./ingest/batching-writer.js";
import { createIngestPipeline } from "./ingest/ingest-pipeline.js";
import { openLimits } from "./limits/open-limits.js";
import type { Logger } from "./log/logger.js";
import { instrumentedStore } from "./observability/instrumented-store.js";
import { createMetrics } from "./observability/metrics.js";
import { watchWriteHealth } from "./observability/write-health.js";
import { listen } from "./server/listen.js";
import { listenForMetrics } from "./server/metrics-endpoint.js";
import { createRequestHandler } from "./server/request-handler.js";
import { openStore } from "./store/open-store.js";
import { metadataAttributeNames } from "./otlp/call-attribution.js";
import { projectPrices } from "./pricing/project-prices.js";
import { repriceRunner } from "./pricing/reprice-job.js";
import { oidcSettings } from "./sso/oidc-settings.js";
import { invitationMailer } from "./teams/invitation-mailer.js";
import { readLimit } from "./teams/read-limit.js";
import { smtpTransport } from "./teams/smtp-transport.js";
import { openAlertSecretBox } from "./alerts/alert-secret-box.js";
import { type DeliveryWorker, startDeliveryWorker } from "./alerts/delivery-worker.js";
import { ruleValues, startEvaluator } from "./alerts/evaluation/evaluator.js";
import type { MeasureDeps } from "./alerts/evaluation/measure-rule.js";
import { storedTraceCount } from "./limits/stored-trace-count.js";

/** How often an instance looks for re-price jobs a stopped instance left running. */
const repriceSweepMs = 30_000;

/** How long start-up waits for Redis before serving with the in-process insurance limiters. */
const redisConnectWaitMs = 3000;

export interface RunningService {
  port: number;
  url: string;
  /** The metrics port (METRICS_PORT), when there is one. */
  metricsPort?: number;
  /** Stops accepting, answers what is in flight, commits every queued trace, then closes the store. */
  close(graceMs?: number): Promise<void>;
}

/** Wires the configured stores, limiters and protocol edges together and starts listening. */
export async function startService(config: Config, logger: Logger): Promise<RunningService> {
  const plans = loadPlans(config.plansFile);
  const store = await openStore(config, logger);
  const metrics = createMetrics();
  const writeHealth = watchWriteHealth(logger);
  const writer = new BatchingWriter(instrumentedStore(store, metrics, writeHealth), {
    maxBatch: Math.min(config.writerMaxBatch, store.handover?.batchSize ?? Number.POSITIVE_INFINITY),
    maxQueue: config.writerMaxQueue,
    maxWaitMs: config.writerMaxWaitMs,
    timeoutMs: config.writeTimeoutMs,
    maxInFlight: store.handover?.maxInFlight ?? 1,
  });
  metrics.gauge("calltrace_writer_queue_depth", "Traces waiting for a group commit", () => writer.depth);
  const limits = openLimits(config, store, logger, { metrics });
  const verifier = createKeyVerifier(store.keys);
  const prices = projectPrices(store.prices);
  // Re-price jobs left running by a stopped instance are taken up again, now and now and then.
  const reprice = repriceRunner(store.prices);
  const resumeReprices = () => void reprice.resumeStale().catch((error: unknown) => logger.warn({ err: error }, "re-price resume failed"));
  resumeReprices();
  const repriceSweep = setInterval(resumeReprices, repriceSweepMs).unref();
  const pipeline = createIngestPipeline({
    verifier,
    limiter: limits.limiter,
    authFailures: limits.authFailures,
    quota: limits.quota,
    plans,
    writer,
    countryOf: openCountryLookup(),
    timeoutMs: config.writeTimeoutMs,
    prices,
    retentionDays: config.retentionDays,
  });
  const alertSecrets = await openAlertSecretBox(config, store.alerts, logger);
  let deliveries: DeliveryWorker | undefined;
  const measuring: MeasureDeps = {
    counters: store.scopeCounters,
    teams: store.teams,
    reader: store,
    keys: store.keys,
    plans,
    monthlyCount: storedTraceCount(store),
  };
  const shuttingDown = new AbortController();
  const handler = createRequestHandler({
    shutdown: shuttingDown.signal,
    pipeline,
    otlp: {
      metadataAttributes: metadataAttributeNames(config.otlpMetadataAttributes),
      storedSpans: (accountId, otlpTraceIds) => store.otlpSpans(accountId, otlpTraceIds),
    },
    ready: async (): Promise<Record<string, string>> => {
      await store.ping();
      const failing = writeHealth.problem();
      if (failing) throw new Error(failing);
      const degraded = limits.degradation();
      return degraded ? { limits: degraded } : {};
    },
    maxBodyBytes: config.maxBodyBytes,
    budget: budgetRoute({
      verifier,
      authFailures: limits.authFailures,
      limitRead: readLimit(limits.limiter, config.readPerMinute),
      status: budgetStatusReader({ rules: store.alerts, teams: store.teams, counters: store.scopeCounters, cacheMs: config.budgetCacheMs }),
      trustProxy: config.trustProxy,
      timeoutMs: config.writeTimeoutMs,
    }),
    directUnary: config.directUnary,
    otlpReader: config.otlpReader,
    otlpMaxBodyBytes: config.otlpMaxBodyBytes,
    trustProxy: config.trustProxy,
    logger,
    metrics,
    ...(config.metricsToken ? { metricsToken: config.metricsToken } : {}),
    dashboard: createDashboard({
      keys: store.keys,
      users: store.users,
      teams: store.teams,
      verifier,
      limiter: limits.limiter,
      readPerMinute: config.readPerMinute,
      authFailures: limits.authFailures,
      retentionDays: config.retentionDays,
      reader: store,
      plans,
      signupOpen: config.signupOpen,
      sessionTtlSeconds: config.sessionTtl,
      trustProxy: config.trustProxy,
      logger,
      limits: config,
      oidc: oidcSettings(config),
      mailer: config.smtpUrl ? invitationMailer(config.smtpUrl, config.smtpFrom) : undefined,
      publicUrl: config.publicUrl,
      onKeysRevoked: (hashes) => verifier.forget(hashes),
      pricing: { prices: store.prices, cache: prices, reprice },
      alerts: {
        store: store.alerts,
        secrets: alertSecrets,
        privateUrls: config.alertPrivateUrls,
        onDue: () => deliveries?.poke(),
        ruleValues: ruleValues(measuring),
      },
    }),
  });
  const tls =
    config.tlsCertFile && config.tlsKeyFile ? { cert: readFileSync(config.tlsCertFile), key: readFileSync(config.tlsKeyFile) } : undefined;
  // Until Redis answers, each instance would count limits on its own: give it a moment first.
  await limits.connected(redisConnectWaitMs);
  const listener = await listen(handler, {
    port: config.port,
    host: config.host,
    ...(tls ? { tls } : {}),
    limits: config,
  });
  const metricsListener =
    config.metricsPort === undefined
      ? undefined
      : await listenForMetrics(metrics, { port: config.metricsPort, host: config.host, token: config.metricsToken });
  deliveries = startDeliveryWorker({
    store: store.alerts,
    box: alertSecrets,
    retryBaseMs: config.alertRetryBaseMs,
    privateUrls: config.alertPrivateUrls,
    publicUrl: config.publicUrl ?? listener.url,
    mail: config.smtpUrl ? { transport: smtpTransport(config.smtpUrl), from: config.smtpFrom } : undefined,
    logger,
  });
  const evaluator = startEvaluator({
    ...measuring,
    alerts: store.alerts,
    intervalMs: config.alertEvaluateMs,
    logger,
    onEnqueued: () => deliveries?.poke(),
  });
  logger.info(
    {
      port: listener.port,
      url: listener.url,
      store: config.mongodbUri ? "mongodb" : "embedded",
      ...(metricsListener ? { metricsPort: metricsListener.port } : {}),
    },
    "listening",
  );

  return {
    port: listener.port,
    url: listener.url,
    ...(metricsListener ? { metricsPort: metricsListener.port } : {}),
    async close(graceMs = config.shutdownGraceMs) {
      // One deadline for all of it: what the store has not committed by then was never answered 202.
      const deadline = performance.now() + graceMs;
      shuttingDown.abort();
      await listener.close(graceMs);
      await metricsListener?.close();
      await evaluator.close();
      await deliveries?.close();
      await writer.drain(Math.max(0, deadline - performance.now()));
      logger.info({ ...writer.stats }, "writer drained");
      await limits.close();
      clearInterval(repriceSweep);
      await reprice.close();
      await store.close();
    },
  };
}
