import { setTimeout as sleep } from "node:timers/promises";
import type { PriceStore, RepriceInput, RepriceJobRecord, RepricedTrace } from "../store/price-store.js";
import { projectCost, serverPricing } from "./custom-prices.js";
import { PriceBook } from "./price-match.js";

export interface RepriceOptions {
  /** Traces per batch: one short transaction each, so ingest keeps flowing between them. */
  batchSize?: number;
  /** A pause between batches, for the writers. */
  pauseMs?: number;
  /** A running job not advanced for this long was left by a stopped instance and is resumed. */
  staleMs?: number;
}

export interface RepriceRunner {
  /** Starts re-pricing the project's traces received in [from, until) and answers the job at once. */
  start(projectId: string, range: { from: Date; until: Date }): Promise<RepriceJobRecord>;
  /** Resumes the running jobs no instance has advanced for a while (a crash, a restart). */
  resumeStale(): Promise<void>;
  /** Resolves once the jobs this instance runs now have finished (done or failed). */
  settled(): Promise<void>;
  /** Stops after each job's current batch (they stay running, for a later resume) and resolves then. */
  close(): Promise<void>;
}

/** A trace's prices as they come out of the project's prices now: the same as ingest would give it. */
export function repricer(book: PriceBook): (trace: RepriceInput) => RepricedTrace {
  return (trace) => serverPricing(trace.source, trace.costUsd, projectCost(book, trace, trace.receivedAt));
}

/**
 * Re-prices stored traces in the background, a bounded batch at a time, each batch saving the
 * job's cursor and progress: a job survives a restart (resumeStale) and repeating one changes
 * nothing (the same prices give the same result).
 */
export function repriceRunner(store: PriceStore, options: RepriceOptions = {}): RepriceRunner {
  const batchSize = options.batchSize ?? 500;
  const pauseMs = options.pauseMs ?? 20;
  const staleMs = options.staleMs ?? 60_000;
  const running = new Map<string, Promise<void>>();
  let closing = false;

  const run = (job: RepriceJobRecord) => {
    if (running.has(job.id)) return;
    const work = (async () => {
      let current = job;
      try {
        // The prices as they stand when the job starts: a change after it needs another re-price.
        const reprice = repricer(new PriceBook(await store.listPrices(job.projectId)));
        while (current.state === "running" && !closing) {
          current = await store.repriceBatch(current, reprice, batchSize);
          if (current.state === "running" && pauseMs > 0) await sleep(pauseMs);
        }
      } catch (error) {
        await store.failRepriceJob(current, (error as Error).message).catch(() => {});
      } finally {
        running.delete(job.id);
      }
    })();
    running.set(job.id, work);
  };

  return {
    async start(projectId, range) {
      const job = await store.createRepriceJob(projectId, range);
      run(job);
      return job;
    },
    async resumeStale() {
      const before = Date.now() - staleMs;
      for (const job of await store.runningRepriceJobs()) if (job.updatedAt.getTime() <= before) run(job);
    },
    async settled() {
      await Promise.all(running.values());
    },
    async close() {
      closing = true;
      await Promise.all(running.values());
    },
  };
}
