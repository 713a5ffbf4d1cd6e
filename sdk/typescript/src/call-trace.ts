import { anthropicInstrumentation } from "./anthropic-instrumentation.js";
import { BudgetGuard, budgetUrl } from "./budget-guard.js";
import { geminiInstrumentation } from "./gemini-instrumentation.js";
import type { Instrumentation } from "./instrumentation.js";
import { findPackage, otherLoadedCopies, type PackageCopy } from "./load-package.js";
import { openaiInstrumentation } from "./openai-instrumentation.js";
import { resolveOptions, type InitOptions, type ResolvedOptions } from "./options.js";
import { PriceTable } from "./price-table.js";
import { TraceRecorder } from "./trace-recorder.js";
import { TraceSender, type DeliveryStats } from "./trace-sender.js";

const INSTRUMENTATIONS: readonly Instrumentation[] = [
  openaiInstrumentation,
  anthropicInstrumentation,
  geminiInstrumentation,
];

/** Delivery counters plus which provider packages are traced. */
export interface CallTraceStats extends DeliveryStats {
  /** Patched packages and builds, e.g. `["openai (cjs)", "openai (esm)"]`. */
  instrumented: string[];
}

/**
 * One configured tracer: its options, price table, sender and patches. All
 * state lives here, so a second `init()` disposes of the first tracer and
 * starts from nothing.
 */
export class CallTrace {
  readonly #options: ResolvedOptions;
  readonly #sender: TraceSender | undefined;
  readonly #recorder: TraceRecorder | undefined;
  readonly #budget: BudgetGuard | undefined;
  readonly #undo: Array<() => void> = [];
  readonly #instrumented: string[] = [];
  // Package folders patched, by package name; what the application loads from elsewhere is not traced.
  readonly #patchedDirs = new Map<string, string[]>();
  readonly #warnedCopies = new Set<string>();
  #unpatched = false;

  /**
   * Checks the options and prepares the tracer, without side effects: a
   * configuration that cannot work throws here, before anything is patched.
   */
  constructor(options: InitOptions = {}, env: NodeJS.ProcessEnv = process.env) {
    this.#options = resolveOptions(options, env);
    const prices = new PriceTable(this.#options.prices);
    const { apiKey, warn, enabled } = this.#options;
    if (apiKey === undefined || !enabled) return;
    const sender = new TraceSender({
      endpoint: this.#options.endpoint,
      apiKey,
      queueSize: this.#options.maxQueueSize,
      concurrency: this.#options.concurrency,
      requestTimeoutMs: this.#options.requestTimeoutMs,
      retry: {
        maxAttempts: this.#options.maxAttempts,
        baseDelayMs: this.#options.retryBaseDelayMs,
        maxDelayMs: this.#options.retryMaxDelayMs,
      },
      warn,
    });
    this.#sender = sender;
    if (this.#options.enforceBudget) {
      this.#budget = new BudgetGuard({
        url: budgetUrl(this.#options.endpoint),
        apiKey,
        refreshMs: this.#options.budgetRefreshMs,
        timeoutMs: this.#options.requestTimeoutMs,
        defaults: this.#options.defaults,
        warn,
      });
    }
    this.#recorder = new TraceRecorder({
      apiKey,
      prices,
      send: (trace) => sender.enqueue(trace),
      warn,
      defaults: this.#options.defaults,
      sampleRate: this.#options.sampleRate,
      budget: this.#budget,
    });
  }

  /**
   * Patches the installed provider libraries. CommonJS builds load
   * synchronously, so a CommonJS application is traced as soon as this
   * returns; ESM builds load asynchronously: the promise resolves when they
   * are patched too.
   */
  start(): Promise<void> {
    const { apiKey, warn, enabled } = this.#options;
    if (!enabled) return Promise.resolve(); // switched off: silently, as asked
    if (apiKey === undefined) {
      warn("no API key (pass apiKey to init() or set CALLTRACE_API_KEY); tracing is off");
      return Promise.resolve();
    }
    if (!apiKey.startsWith("ct_")) warn("the API key does not start with ct_; the service will likely reject it");
    const { pathname } = this.#options.endpoint;
    if (!pathname.endsWith("/v1/traces")) {
      warn(`the endpoint path is ${pathname}, not .../v1/traces: the endpoint is the full URL of the trace endpoint`);
    }
    process.on("beforeExit", this.#flushBeforeExit);
    this.#budget?.start();
    const found: Array<[Instrumentation, PackageCopy]> = [];
    for (const instrumentation of INSTRUMENTATIONS) {
      let copies: PackageCopy[];
      try {
        copies = findPackage(instrumentation.packageName);
      } catch (error) {
        this.#warnLoadFailure(instrumentation, error);
        continue;
      }
      this.#patchedDirs.set(
        instrumentation.packageName,
        copies.map((copy) => copy.dir),
      );
      for (const copy of copies) {
        found.push([instrumentation, copy]);
        this.#patch(instrumentation, "cjs", () => copy.require());
      }
    }
    // Once the application has had time to load its modules: is any copy it loaded left unpatched?
    setTimeout(() => this.#checkLoadedCopies(), 1_000).unref();
    return Promise.all(
      found.map(async ([instrumentation, copy]) => {
        let esm: unknown;
        try {
          esm = await copy.import();
        } catch (error) {
          this.#warnLoadFailure(instrumentation, error);
          return;
        }
        this.#patch(instrumentation, "esm", () => esm);
      }),
    ).then(() => undefined);
  }

  stats(): CallTraceStats {
    this.#checkLoadedCopies();
    const delivery = this.#sender?.stats() ?? { sent: 0, failed: 0, dropped: 0, pending: 0 };
    return { ...delivery, instrumented: [...this.#instrumented] };
  }

  /** Waits until every trace recorded so far is delivered or given up; `false` on timeout. */
  flush(timeoutMs?: number): Promise<boolean> {
    return this.#sender?.flush(timeoutMs) ?? Promise.resolve(true);
  }

  /** Restores every patched method. Traces already recorded are still delivered. */
  unpatch(): void {
    this.#unpatched = true;
    this.#budget?.stop();
    for (const undo of this.#undo.splice(0)) undo();
    this.#instrumented.length = 0;
  }

  /** Unpatches, flushes for at most `timeoutMs` (default: the exit flush timeout), then stops for good. */
  async shutdown(timeoutMs: number = this.#options.exitFlushTimeoutMs): Promise<void> {
    this.unpatch();
    process.off("beforeExit", this.#flushBeforeExit);
    await this.flush(timeoutMs);
    this.#sender?.close();
  }

  #patch(instrumentation: Instrumentation, build: "cjs" | "esm", load: () => unknown): void {
    if (this.#unpatched || !this.#recorder) return;
    let moduleExports: unknown;
    try {
      moduleExports = load();
    } catch (error) {
      this.#warnLoadFailure(instrumentation, error);
      return;
    }
    if (moduleExports === undefined) return; // not installed: skipped silently
    const undo = instrumentation.patch(moduleExports, this.#recorder);
    if (undo.length === 0) return; // already traced (same module) or a shape we do not know
    this.#undo.push(...undo);
    this.#instrumented.push(`${instrumentation.packageName} (${build})`);
  }

  /**
   * Warns once per copy of a provider package that the application loaded
   * (with require) from somewhere other than the copies patched, such as a
   * dependency's own nested copy: its calls are not traced.
   */
  #checkLoadedCopies(): void {
    if (this.#unpatched) return;
    for (const [name, dirs] of this.#patchedDirs) {
      for (const dir of otherLoadedCopies(name, dirs)) {
        if (this.#warnedCopies.has(dir)) continue;
        this.#warnedCopies.add(dir);
        const patched = dirs.length > 0 ? dirs.join(" and ") : "none";
        this.#options.warn(
          `the application loaded ${name} from ${dir}, which is not traced: calltrace patched the copies its ` +
            `main module and working directory resolve (${patched})`,
        );
      }
    }
  }

  #warnLoadFailure(instrumentation: Instrumentation, error: unknown): void {
    const reason = error instanceof Error ? error.message : String(error);
    this.#options.warn(
      `${instrumentation.packageName} is installed but failed to load, so it is not traced: ${reason}`,
    );
  }

  // The event loop is empty but traces are pending: hold the process open for
  // at most exitFlushTimeoutMs, then drop what is left so that it can exit.
  // Not reached on process.exit() or a signal; call shutdown() there.
  readonly #flushBeforeExit = (): void => {
    this.#checkLoadedCopies();
    // Nothing can read a stream any more: trace the ones left unread.
    this.#recorder?.abandonUnread();
    const sender = this.#sender;
    if (!sender || sender.stats().pending === 0) return;
    void sender.flush(this.#options.exitFlushTimeoutMs).then((drained) => {
      if (!drained) sender.close();
    });
  };
}
