import type { TraceStore, TraceWrite, WriteOutcome } from "../store/trace-store.js";

export interface BatchingWriterOptions {
  /** Most writes committed together. */
  maxBatch?: number;
  /** Most writes waiting; beyond it writes are refused at once (backpressure, D13). */
  maxQueue?: number;
}

export class WriterQueueFullError extends Error {
  constructor() {
    super("the write queue is full");
  }
}

interface Pending {
  write: TraceWrite;
  resolve: (outcome: WriteOutcome) => void;
}

/**
 * Group commit (D13): writes queue up while a batch is being committed and go together in the
 * next one, so a burst costs one durable commit instead of one per request. A write settles
 * only when its batch is committed.
 */
export class BatchingWriter {
  private readonly queue: Pending[] = [];
  private readonly maxBatch: number;
  private readonly maxQueue: number;
  private flushing: Promise<void> | undefined;
  private scheduled = false;

  constructor(
    private readonly store: TraceStore,
    options: BatchingWriterOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 1000;
    this.maxQueue = options.maxQueue ?? 20_000;
  }

  /** Resolves with what became of the write once it is committed (or failed); never rejects but when the queue is full. */
  write(write: TraceWrite): Promise<WriteOutcome> {
    if (this.queue.length >= this.maxQueue) return Promise.reject(new WriterQueueFullError());
    return new Promise((resolve) => {
      this.queue.push({ write, resolve });
      this.schedule();
    });
  }

  get depth(): number {
    return this.queue.length;
  }

  /** Resolves once every write queued so far is settled. */
  async drain(): Promise<void> {
    while (this.flushing || this.queue.length > 0) {
      await (this.flushing ?? this.flush());
    }
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    // setImmediate runs after the current round of I/O callbacks: every request that arrived in
    // this turn of the event loop joins the batch.
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private flush(): Promise<void> {
    if (this.flushing || this.queue.length === 0) return this.flushing ?? Promise.resolve();
    const batch = this.queue.splice(0, this.maxBatch);
    this.flushing = this.commit(batch).finally(() => {
      this.flushing = undefined;
      if (this.queue.length > 0) this.schedule();
    });
    return this.flushing;
  }

  private async commit(batch: Pending[]): Promise<void> {
    let outcomes: WriteOutcome[];
    try {
      outcomes = await this.store.writeBatch(batch.map((p) => p.write));
    } catch (error) {
      const failed: WriteOutcome = { kind: "failed", error: error as Error };
      outcomes = batch.map(() => failed);
    }
    batch.forEach((p, i) => p.resolve(outcomes[i] ?? { kind: "failed", error: new Error("store answered fewer outcomes than writes") }));
  }
}
