import type { TraceStore, TraceWrite, WriteOutcome } from "../store/trace-store.js";

export interface BatchingWriterOptions {
  /** Most writes committed together. Default 1000. */
  maxBatch?: number;
  /** Most writes waiting for a commit; beyond it writes are refused at once (backpressure, D13). Default 20000. */
  maxQueue?: number;
  /** Longest a write waits for others to join its batch, in milliseconds. Default 2. */
  maxWaitMs?: number;
  /**
   * Longest a write may take from queueing to commit, in milliseconds; past it the write answers
   * `failed` (503), even when the store never answers. Default 5000.
   */
  timeoutMs?: number;
  /**
   * Batches handed to the store at once. 1 waits for each commit before sending the next; a
   * store that merges what queues up behind a commit (the embedded store's writer thread) takes
   * more, so the event loop never waits for a commit with nothing to do. Default 1.
   */
  maxInFlight?: number;
}

export class WriterQueueFullError extends Error {
  constructor() {
    super("the write queue is full");
  }
}

interface Pending {
  write: TraceWrite;
  resolve: (outcome: WriteOutcome) => void;
  /** When the write fails if still unanswered (performance.now() clock). */
  deadline: number;
  settled: boolean;
  /** Answered before its batch was committed: told what became of it when it is. */
  committed?: (outcome: WriteOutcome) => void;
}

function settle(pending: Pending, outcome: WriteOutcome): void {
  if (pending.settled) {
    pending.committed?.(outcome);
    return;
  }
  pending.settled = true;
  pending.resolve(outcome);
}

/**
 * Group commit (D13): a write waits at most maxWaitMs for others to join it, or less once
 * maxBatch are waiting, and writes that arrive while a batch is being committed go together in
 * the next one, so a burst costs one durable commit instead of one per request. A write settles
 * only when its batch is committed, or fails once timeoutMs have passed: never a hang, and never
 * `stored` for a write the store did not confirm. Deadlines are checked by one sweep timer, not
 * a timer per write (the hot path would pay for arming and clearing each one).
 */
export class BatchingWriter {
  private queue: Pending[] = [];
  private readonly maxBatch: number;
  private readonly maxQueue: number;
  private readonly maxWaitMs: number;
  private readonly timeoutMs: number;
  private readonly maxInFlight: number;
  /** Batches handed to the store and not yet answered, with their writes. */
  private readonly inFlight = new Map<Promise<void>, Pending[]>();
  private timer: NodeJS.Timeout | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private batches = 0;
  private committed = 0;

  constructor(
    private readonly store: TraceStore,
    options: BatchingWriterOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 1000;
    this.maxQueue = options.maxQueue ?? 20_000;
    this.maxWaitMs = options.maxWaitMs ?? 2;
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.maxInFlight = options.maxInFlight ?? 1;
  }

  /**
   * Resolves with what became of the write, within `timeoutMs` (at most the writer's own: what is
   * left of the request's time); rejects only with WriterQueueFullError, at once.
   */
  write(write: TraceWrite, timeoutMs = this.timeoutMs): Promise<WriteOutcome> {
    if (this.queue.length >= this.maxQueue) return Promise.reject(new WriterQueueFullError());
    return new Promise((resolve) => {
      this.queue.push({ write, resolve, deadline: performance.now() + Math.min(timeoutMs, this.timeoutMs), settled: false });
      this.sweeper ??= setInterval(() => this.sweep(), this.sweepIntervalMs());
      this.schedule();
    });
  }

  /** Writes waiting for a commit. */
  get depth(): number {
    return this.queue.length;
  }

  /** Batches committed (or failed) so far and the writes in them; the average batch size is their ratio. */
  get stats(): { batches: number; writes: number } {
    return { batches: this.batches, writes: this.committed };
  }

  /**
   * Resolves once every write queued so far is settled (each within timeoutMs), or after
   * `withinMs`: then what is still queued fails (it was never written, so never acknowledged),
   * and what is being committed is left to the store's close.
   */
  async drain(withinMs = Number.POSITIVE_INFINITY): Promise<void> {
    const giveUpAt = performance.now() + withinMs;
    while (this.inFlight.size > 0 || this.queue.length > 0) {
      const left = giveUpAt - performance.now();
      if (left <= 0) {
        const failure = { kind: "failed", error: new Error("the service is shutting down") } as const;
        for (const pending of this.queue.splice(0)) settle(pending, failure);
        return;
      }
      clearTimeout(this.timer);
      this.timer = undefined;
      this.flush();
      let timer: NodeJS.Timeout | undefined;
      const waits: Promise<unknown>[] = [Promise.race(this.inFlight.keys())];
      // Node fires a timer past 2^31-1 ms after 1 ms, and this would spin: no limit (Infinity) waits on the commits alone, a long one in steps.
      if (Number.isFinite(left)) waits.push(new Promise((resolve) => (timer = setTimeout(resolve, Math.min(left, maxTimerMs)))));
      await Promise.race(waits);
      clearTimeout(timer);
    }
  }

  /** A deadline is noticed at most a tenth of timeoutMs (at most 100 ms) late. */
  private sweepIntervalMs(): number {
    return Math.max(1, Math.min(100, this.timeoutMs / 10));
  }

  /**
   * Fails the writes past their deadline. Still queued: they will never be written. In a batch
   * being committed: they may yet be stored, but the caller is answered now (a 503 for a stored
   * trace is allowed; the reverse is not), with the commit's outcome to come, which the monthly
   * quota waits for before giving the trace's reservation back. A write given less time than the writer's own may
   * expire before the ones queued ahead of it, so every write is looked at.
   */
  private sweep(): void {
    const now = performance.now();
    const failure = { kind: "failed", error: new Error("the write was not committed in the time the request had left") } as const;
    if (this.queue.some((pending) => pending.deadline <= now)) {
      const kept: Pending[] = [];
      for (const pending of this.queue) {
        if (pending.deadline <= now) settle(pending, failure);
        else kept.push(pending);
      }
      this.queue = kept;
    }
    for (const batch of this.inFlight.values()) {
      for (const pending of batch) {
        if (pending.deadline > now || pending.settled) continue;
        settle(pending, { ...failure, committed: new Promise<WriteOutcome>((resolve) => (pending.committed = resolve)) });
      }
    }
    if (this.queue.length === 0 && this.inFlight.size === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  private schedule(): void {
    if (this.inFlight.size >= this.maxInFlight) return; // a finishing batch schedules the next one
    if (this.queue.length >= this.maxBatch) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.flush();
    } else if (this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.flush();
      }, this.maxWaitMs);
    }
  }

  private flush(): void {
    if (this.inFlight.size >= this.maxInFlight || this.queue.length === 0) return;
    const batch = this.queue.splice(0, this.maxBatch);
    const committing: Promise<void> = this.commit(batch).finally(() => {
      this.inFlight.delete(committing);
      // Whatever queued meanwhile has waited a commit's time already: it goes at once.
      this.flush();
    });
    this.inFlight.set(committing, batch);
  }

  private async commit(batch: Pending[]): Promise<void> {
    let outcomes: WriteOutcome[];
    try {
      outcomes = await this.store.writeBatch(batch.map((p) => p.write));
    } catch (error) {
      const failed: WriteOutcome = { kind: "failed", error: error as Error };
      outcomes = batch.map(() => failed);
    }
    this.batches += 1;
    this.committed += batch.length;
    for (let i = 0; i < batch.length; i++) {
      settle(batch[i]!, outcomes[i] ?? { kind: "failed", error: new Error("store answered fewer outcomes than writes") });
    }
  }
}

/** The longest delay a Node timer holds (2^31-1 ms, about 24.8 days). */
const maxTimerMs = 2_147_483_647;
