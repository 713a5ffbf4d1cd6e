import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { BoundedQueue } from "./bounded-queue.js";
import { PipelinedConnection, type PostResult } from "./pipelined-connection.js";
import { retryDelay, type RetryPolicy } from "./retry-delay.js";
import type { Trace } from "./trace.js";

export interface TraceSenderOptions {
  endpoint: URL;
  apiKey: string;
  queueSize: number;
  /** Traces in flight at once (pipelined on one connection). */
  concurrency: number;
  requestTimeoutMs: number;
  retry: RetryPolicy;
  warn: (message: string) => void;
}

/** Delivery counters since the sender was created. */
export interface DeliveryStats {
  /** Accepted by the service (2xx). */
  sent: number;
  /** Rejected by the service, or given up after retries. */
  failed: number;
  /** Pushed out of a full queue, or discarded at shutdown or exit. */
  dropped: number;
  /** Queued or in flight. */
  pending: number;
}

interface Pending {
  trace: Trace;
  // One key per trace, reused by its retries, so a retry of a trace the
  // service already stored is answered without storing it twice (D14).
  idempotencyKey: string;
}

// The longest delay a Node timer accepts: "wait for ever" for flush().
const FOREVER_MS = 2 ** 31 - 1;
// An idle sender waits this long after a first trace before sending, so that
// traces recorded meanwhile go out together, in one write on the connection.
const LINGER_MS = 20;

/**
 * Delivers traces in the background: a bounded queue drained by a few
 * workers, each POSTing one trace at a time over a shared pipelined
 * connection, with retries on 429, 503 and network errors. A "try later" from
 * the service pauses every worker, since they all talk to the same server.
 * Nothing here throws to the caller or keeps the process alive; only
 * `flush()` holds the process open while it waits.
 */
export class TraceSender {
  readonly #options: TraceSenderOptions;
  readonly #queue: BoundedQueue<Pending>;
  readonly #connection: PipelinedConnection;
  readonly #headers: string;
  readonly #idleWaiters = new Set<() => void>();
  readonly #pauses = new Set<() => void>();
  readonly #warned = new Set<string>();
  #workers = 0;
  #sent = 0;
  #failed = 0;
  #abandoned = 0;
  #resumeAt = 0;
  #closed = false;
  #linger: NodeJS.Timeout | undefined;

  constructor(options: TraceSenderOptions) {
    this.#options = options;
    this.#queue = new BoundedQueue(options.queueSize);
    this.#connection = new PipelinedConnection(options.endpoint, {
      timeoutMs: options.requestTimeoutMs,
      idleMs: 4_000, // under the 5 s keep-alive timeout of a Node server
    });
    // The key was checked to be printable ASCII, so it cannot break a header line.
    this.#headers = `Authorization: Bearer ${options.apiKey}\r\nContent-Type: application/json\r\n`;
  }

  /** Queues a trace and returns at once. */
  enqueue(trace: Trace): void {
    if (this.#closed) {
      this.#abandoned++;
      return;
    }
    this.#queue.push({ trace, idempotencyKey: randomUUID() });
    // Busy workers pick it up; an idle sender starts them a little later, on
    // a timer that never keeps the process alive (flush() starts them at once).
    if (this.#workers === 0 && this.#linger === undefined) {
      this.#linger = setTimeout(() => this.#startWorkers(), LINGER_MS);
      this.#linger.unref();
    }
  }

  stats(): DeliveryStats {
    return {
      sent: this.#sent,
      failed: this.#failed,
      dropped: this.#queue.dropped + this.#abandoned,
      pending: this.#queue.size + this.#workers,
    };
  }

  /**
   * Resolves `true` once every queued trace is delivered or given up, or
   * `false` if `timeoutMs` passes first. Keeps the process alive meanwhile.
   */
  flush(timeoutMs: number = FOREVER_MS): Promise<boolean> {
    if (this.#isIdle()) return Promise.resolve(true);
    this.#startWorkers();
    return new Promise((resolve) => {
      const settle = (drained: boolean) => {
        clearTimeout(timer);
        this.#idleWaiters.delete(onIdle);
        resolve(drained);
      };
      const onIdle = () => settle(true);
      const timer = setTimeout(() => settle(false), Math.min(timeoutMs, FOREVER_MS));
      this.#idleWaiters.add(onIdle);
    });
  }

  /** Stops delivery: discards what is queued and aborts what is in flight. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#linger);
    this.#linger = undefined;
    this.#queue.clear();
    this.#connection.close();
    for (const resume of this.#pauses) resume();
  }

  #startWorkers(): void {
    clearTimeout(this.#linger);
    this.#linger = undefined;
    while (this.#workers < Math.min(this.#options.concurrency, this.#queue.size)) {
      this.#workers++;
      void this.#work();
    }
  }

  async #work(): Promise<void> {
    try {
      for (let next = this.#queue.shift(); next; next = this.#queue.shift()) {
        await this.#deliver(next);
      }
    } finally {
      this.#workers--;
      if (this.#isIdle()) for (const onIdle of [...this.#idleWaiters]) onIdle();
    }
  }

  async #deliver(pending: Pending): Promise<void> {
    const body = JSON.stringify(pending.trace);
    const headers = `${this.#headers}Idempotency-Key: ${pending.idempotencyKey}\r\n`;
    for (let attempt = 1; ; attempt++) {
      await this.#pauseUntilResume();
      if (this.#closed) {
        this.#abandoned++;
        return;
      }
      let outcome: PostResult | undefined;
      try {
        outcome = await this.#connection.post(headers, body);
      } catch {
        outcome = undefined; // network error, timeout or close: swallowed
      }
      if (outcome && outcome.status >= 200 && outcome.status < 300) {
        this.#sent++;
        return;
      }
      const delay = this.#closed ? undefined : retryDelay(outcome, attempt, this.#options.retry);
      if (delay === undefined) {
        if (this.#closed) this.#abandoned++;
        else this.#giveUp(outcome, attempt);
        return;
      }
      this.#resumeAt = Math.max(this.#resumeAt, performance.now() + delay);
    }
  }

  #pauseUntilResume(): Promise<void> {
    const wait = this.#resumeAt - performance.now();
    if (wait <= 0 || this.#closed) return Promise.resolve();
    return new Promise((resolve) => {
      const resume = () => {
        clearTimeout(timer);
        this.#pauses.delete(resume);
        resolve();
      };
      const timer = setTimeout(resume, wait);
      timer.unref();
      this.#pauses.add(resume);
    });
  }

  #giveUp(outcome: PostResult | undefined, attempts: number): void {
    this.#failed++;
    if (outcome === undefined) {
      this.#warnOnce(
        "unreachable",
        `could not reach ${this.#options.endpoint.href} after ${attempts} attempts; dropping traces until it answers`,
      );
    } else if (outcome.status === 401) {
      this.#warnOnce("401", "the service rejected the API key (401); traces are dropped");
    } else if (outcome.status === 429 || outcome.status === 503) {
      this.#warnOnce(
        `${outcome.status}`,
        `the service keeps answering ${outcome.status} (${outcome.error ?? "try later"}); traces are dropped`,
      );
    } else {
      const details = outcome.details ?? outcome.error ?? "";
      this.#warnOnce(`${outcome.status}`, `the service rejected a trace (${outcome.status}) ${details}`.trim());
    }
  }

  #warnOnce(key: string, message: string): void {
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    this.#options.warn(message);
  }

  #isIdle(): boolean {
    return this.#workers === 0 && this.#queue.size === 0;
  }
}
