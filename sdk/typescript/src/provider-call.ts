import { performance } from "node:perf_hooks";
import type { Provider } from "./trace.js";
import type { TraceRecorder } from "./trace-recorder.js";

/** Usage as one response or stream event reports it; absent fields are unknown. */
export interface UsageReport {
  model?: string;
  tokensIn?: number;
  tokensOut?: number;
}

/**
 * One provider call in flight. Instrumentations report usage as they see it
 * (a response, or stream events one by one, where later counts replace
 * earlier ones) and end it once; the first end records the trace and later
 * ends are ignored, so a stream that is both broken out of and errored is
 * traced once.
 */
export class ProviderCall {
  readonly startedAt = performance.now();
  #model: string;
  #tokensIn = 0;
  #tokensOut = 0;
  #failure: string | undefined;
  #ended = false;

  constructor(
    private readonly recorder: TraceRecorder,
    readonly provider: Provider,
    requestModel: unknown,
  ) {
    this.#model = typeof requestModel === "string" ? requestModel : "";
  }

  report(usage: UsageReport): void {
    if (usage.model) this.#model = usage.model;
    if (usage.tokensIn !== undefined) this.#tokensIn = usage.tokensIn;
    if (usage.tokensOut !== undefined) this.#tokensOut = usage.tokensOut;
  }

  /** Marks a failure the provider reported in a body or event, not by throwing. */
  reportFailure(message: string): void {
    this.#failure ??= message;
  }

  succeed(): void {
    this.#end(this.#failure);
  }

  fail(error: unknown): void {
    // `throw undefined` is still a failure.
    this.#end(error === undefined ? "undefined was thrown" : error);
  }

  #end(error: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    try {
      this.recorder.record({
        provider: this.provider,
        model: this.#model,
        tokensIn: this.#tokensIn,
        tokensOut: this.#tokensOut,
        startedAt: this.startedAt,
        error,
      });
    } catch {
      // Tracing must never break the provider call it observes.
    }
  }
}
