import { randomUUID } from "node:crypto";
import type { Logger } from "../log/logger.js";
import type { AlertStore, ClaimedDelivery } from "../store/alert-store.js";
import { dashboardLink } from "./dashboard-link.js";
import { type SenderOptions, sendToDestination } from "./destination-sender.js";
import { retryDelayMs } from "./retry-schedule.js";

const dayMs = 86_400_000;

export interface DeliveryWorkerOptions extends Omit<SenderOptions, "timeoutMs"> {
  store: AlertStore;
  /** The unit of the retry schedule (retry-schedule.ts): 5000 ms, shorter in tests. */
  retryBaseMs: number;
  /** Where dashboard links point, for events that carry none. */
  publicUrl: string;
  /** Longest one attempt may take. Default 15 s. */
  attemptTimeoutMs?: number;
  /** How often due deliveries are looked for. Default 1 s; 0 never polls (only runOnce, in tests). */
  pollMs?: number;
  /** A destination whose attempts have all failed for this long is disabled. Default 3 days. */
  disableAfterMs?: number;
  /** The clock (tests move it forward by days). */
  now?: () => Date;
  logger?: Logger | undefined;
}

export interface DeliveryWorker {
  /** Looks for due deliveries now (after an enqueue or a resend here), not at the next poll. */
  poke(): void;
  /** Makes every due attempt once; resolves with how many it made. */
  runOnce(): Promise<number>;
  /** Stops polling and waits for the attempts under way. */
  close(): Promise<void>;
}

/** Deliveries claimed at once; a full batch makes the worker look again at once. */
const batchSize = 16;

/**
 * Sends the outbox's deliveries. Each attempt is made under a claim in the store, so across
 * instances (MongoDB, --workers) one of them makes it; a claim outlives the attempt's timeout
 * twice over, and an instance killed mid-attempt leaves a claim that expires, after which another
 * makes the attempt again with the same webhook-id (at least once).
 */
export function startDeliveryWorker(options: DeliveryWorkerOptions): DeliveryWorker {
  const holder = randomUUID();
  const timeoutMs = options.attemptTimeoutMs ?? 15_000;
  const claimMs = 2 * timeoutMs + 5_000;
  const disableAfterMs = options.disableAfterMs ?? 3 * dayMs;
  const now = options.now ?? (() => new Date());
  const pollMs = options.pollMs ?? 1000;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;
  let closed = false;

  const attempt = async ({ delivery, event, destination }: ClaimedDelivery) => {
    const at = now();
    const started = performance.now();
    const withLink = event.dashboardUrl ? event : { ...event, dashboardUrl: dashboardLink(options.publicUrl, event) };
    const sent = await sendToDestination(destination, withLink, at, { ...options, timeoutMs });
    const made = delivery.scheduledAttempts + 1;
    const delay = sent.outcome === "ok" || !sent.retryable ? undefined : retryDelayMs(made, options.retryBaseMs);
    const failingFor = sent.outcome === "ok" ? 0 : at.getTime() - (destination.failingSince ?? at).getTime();
    const disable = failingFor >= disableAfterMs;
    const recorded = await options.store.recordAttempt(delivery.id, holder, {
      attempt: {
        at,
        outcome: sent.outcome,
        responseCode: sent.responseCode,
        durationMs: Math.round(performance.now() - started),
        detail: sent.detail,
        trigger: delivery.resent ? "resend" : "schedule",
      },
      state: sent.outcome === "ok" ? "delivered" : delay === undefined ? "failed" : "pending",
      nextAttemptAt: delay === undefined ? undefined : new Date(at.getTime() + delay),
      disableDestination: disable
        ? { at, reason: `every delivery failed for ${Math.floor(failingFor / dayMs)} days (last: ${sent.responseCode || sent.outcome})` }
        : undefined,
    });
    options.logger?.info(
      {
        deliveryId: delivery.id,
        destinationId: destination.id,
        kind: destination.kind,
        outcome: sent.outcome,
        responseCode: sent.responseCode,
        recorded,
        disabled: disable,
      },
      "alert delivery attempt",
    );
  };

  const runOnce = async () => {
    let made = 0;
    for (;;) {
      const claimed = await options.store.claimDueDeliveries(holder, now(), claimMs, batchSize);
      await Promise.all(claimed.map(attempt));
      made += claimed.length;
      if (claimed.length < batchSize || closed) return made;
    }
  };

  const tick = () => {
    if (closed || running) return;
    clearTimeout(timer);
    running = runOnce()
      .catch((error: unknown) => {
        options.logger?.warn({ err: error }, "alert deliveries could not be claimed; trying again");
        return 0;
      })
      .finally(() => {
        running = undefined;
        if (!closed && pollMs > 0) timer = setTimeout(tick, pollMs).unref();
      });
  };
  if (pollMs > 0) timer = setTimeout(tick, 0).unref();

  return {
    poke() {
      if (!running && pollMs > 0) tick();
    },
    runOnce,
    async close() {
      closed = true;
      clearTimeout(timer);
      await running;
    },
  };
}
