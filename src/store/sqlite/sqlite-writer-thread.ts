import { type ResourceLimits, Worker } from "node:worker_threads";
import type { TraceWrite, WriteOutcome } from "../trace-store.js";
import { writeToRow } from "./sqlite-trace-row.js";
import type { CloseRequest, WriteReply, WriteRequest } from "./sqlite-write-worker.js";
import type { AttributeSetOptions } from "./sqlite-batch-commit.js";

/** How long the writer thread gets to finish its commit and close before it is terminated. */
const closeGraceMs = 5000;

/**
 * The worker's entry. Compiled (the installed package), this module is JavaScript and so is the
 * worker's. From a source checkout the worker loads its TypeScript entry through tsx, as the main
 * thread does (on Node 20 an `--import tsx` in the worker's execArgv does not reach the worker's
 * own entry module); tsx is a development dependency, so it is only looked up then.
 */
function workerEntry(): { entry: string | URL; eval: boolean } {
  if (import.meta.url.endsWith(".js")) return { entry: new URL("./sqlite-write-worker.js", import.meta.url), eval: false };
  const bootstrap = `import(${JSON.stringify(import.meta.resolve("tsx/esm/api"))})
  .then((tsx) => { tsx.register(); return import(${JSON.stringify(new URL("./sqlite-write-worker.ts", import.meta.url).href)}); })`;
  return { entry: bootstrap, eval: true };
}

/** Starts the writer thread on `data`'s store; it answers WriteRequests (sqlite-write-worker.ts). */
export function startWriterWorker(data: WriterThreadData, resourceLimits?: ResourceLimits): Worker {
  const { entry, eval: evaluated } = workerEntry();
  return new Worker(entry, { eval: evaluated, workerData: data, resourceLimits });
}

const stored: WriteOutcome = { kind: "stored" };

/** What the writer thread is started with. */
export interface WriterThreadData {
  file: string;
  /** The value cap's bound (value-cap.ts). */
  groupValuesPerDay: number;
  /** Traces a commit takes at most of the queued batches; `commitTracesMax` unless a test wants many small commits. */
  commitTracesMax?: number;
  /** The bound of tag and metadata sets per project, when a test wants a small one (D83, D86). */
  attributeSets?: AttributeSetOptions;
}

export interface SqliteWriterThread {
  /**
   * Commits a batch on the writer thread; rejects when the commit failed or the thread died.
   * `deferRuns`: its runs are left to after a large import (D81).
   */
  write(writes: TraceWrite[], deferRuns?: boolean): Promise<WriteOutcome[]>;
  close(): Promise<void>;
}

/**
 * The embedded store's writer thread, started on the first write (the CLI, which only reads and
 * manages keys, never starts one) and again after a crash.
 */
export function sqliteWriterThread(data: WriterThreadData): SqliteWriterThread {
  let worker: Worker | undefined;
  let nextId = 0;
  const pending = new Map<number, { writes: number; resolve: (o: WriteOutcome[]) => void; reject: (e: Error) => void }>();

  const failAll = (error: Error) => {
    for (const p of pending.values()) p.reject(error);
    pending.clear();
  };

  const start = (): Worker => {
    const started = startWriterWorker(data);
    started.on("message", (reply: WriteReply) => {
      const waiting = pending.get(reply.id);
      if (!waiting) return;
      pending.delete(reply.id);
      if ("error" in reply) return waiting.reject(new Error(reply.error));
      const outcomes = new Array<WriteOutcome>(waiting.writes).fill(stored);
      const { indexes, quotaRemaining } = reply.duplicates;
      indexes.forEach((i, d) => {
        outcomes[i] = { kind: "duplicate", quotaRemaining: quotaRemaining[d] ?? undefined };
      });
      waiting.resolve(outcomes);
    });
    started.on("error", (error) => failAll(error));
    started.on("exit", (code) => {
      if (worker === started) worker = undefined;
      failAll(new Error(`the SQLite writer thread exited (${code})`));
    });
    return started;
  };

  return {
    write(writes, deferRuns = false) {
      worker ??= start();
      const id = nextId++;
      const request: WriteRequest = { id, traces: [], idempotencyKeys: [], quotaRemaining: [], now: Date.now(), deferRuns };
      for (const write of writes) {
        const { values, claimKey } = writeToRow(write);
        request.traces.push(values);
        request.idempotencyKeys.push(claimKey);
        request.quotaRemaining.push(write.quotaRemaining ?? null);
      }
      return new Promise((resolve, reject) => {
        pending.set(id, { writes: writes.length, resolve, reject });
        worker!.postMessage(request);
      });
    },
    async close() {
      const running = worker;
      worker = undefined;
      if (!running) return;
      const exited = new Promise<void>((resolve) => running.once("exit", () => resolve()));
      const close: CloseRequest = { close: true };
      running.postMessage(close);
      // A writer stuck in a commit past the grace time is ended the hard way.
      const stuck = setTimeout(() => void running.terminate(), closeGraceMs);
      await exited;
      clearTimeout(stuck);
    },
  };
}
