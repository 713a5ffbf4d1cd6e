import { performance } from "node:perf_hooks";
import { mergeAttributes, type TraceAttributes } from "./attributes.js";
import { takeCallAttributes } from "./call-attributes.js";
import { dig } from "./read-json.js";
import { currentScope } from "./scope.js";
import type { ServiceTier } from "./price-table.js";
import type { Provider } from "./trace.js";
import type { TraceRecorder } from "./trace-recorder.js";

/** Usage as one response or stream event reports it; absent fields are unknown. */
export interface UsageReport {
  model?: string;
  /** Every input token, cached or not. */
  tokensIn?: number;
  /**
   * Input without cache reads and writes, for providers that report it so
   * (Anthropic): the call's input is then this plus the two cache counts.
   */
  tokensInUncached?: number;
  /** Every billed output token, reasoning included. */
  tokensOut?: number;
  tokensCachedIn?: number;
  tokensCacheWrite?: number;
  tokensReasoning?: number;
  /** Billing modes (sdk/pricing/README.md). */
  billing?: Billing;
}

/** What a call was billed at besides its token counts; each part of the counts it refines. */
export interface Billing {
  serviceTier?: ServiceTier;
  /** Part of the cache writes: written to a 1-hour cache. */
  tokensCacheWrite1h?: number;
  /** Part of the uncached input: audio. */
  tokensAudioIn?: number;
  /** Part of the output: audio. */
  tokensAudioOut?: number;
  webSearchRequests?: number;
}

/** Token counts of a call; `tokensIn` and `tokensOut` include the parts. */
export interface TokenCounts {
  tokensIn: number;
  tokensOut: number;
  tokensCachedIn: number | undefined;
  tokensCacheWrite: number | undefined;
  tokensReasoning: number | undefined;
  billing: Billing;
}

/** A warning to give (once per key) if a successful call ends without usage. */
export interface UsageHint {
  key: string;
  message: string;
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
  #tokensIn: number | undefined;
  #tokensInUncached: number | undefined;
  #tokensOut: number | undefined;
  #tokensCachedIn: number | undefined;
  #tokensCacheWrite: number | undefined;
  #tokensReasoning: number | undefined;
  #billing: Billing = {};
  #firstTokenAt: number | undefined;
  #lastActivityAt: number | undefined;
  #failure: string | undefined;
  #ended = false;
  usageHint: UsageHint | undefined;

  constructor(
    private readonly recorder: TraceRecorder,
    readonly provider: Provider,
    requestModel: unknown,
    /** The scope's and the call's own attributes, merged. */
    readonly attributes: TraceAttributes | undefined,
  ) {
    this.#model = typeof requestModel === "string" ? requestModel : "";
  }

  /** The model the provider reported, else the one requested. */
  get model(): string {
    return this.#model;
  }

  get ended(): boolean {
    return this.#ended;
  }

  report(usage: UsageReport): void {
    if (usage.model) this.#model = usage.model;
    if (usage.tokensIn !== undefined) this.#tokensIn = usage.tokensIn;
    if (usage.tokensInUncached !== undefined) this.#tokensInUncached = usage.tokensInUncached;
    if (usage.tokensOut !== undefined) this.#tokensOut = usage.tokensOut;
    if (usage.tokensCachedIn !== undefined) this.#tokensCachedIn = usage.tokensCachedIn;
    if (usage.tokensCacheWrite !== undefined) this.#tokensCacheWrite = usage.tokensCacheWrite;
    if (usage.tokensReasoning !== undefined) this.#tokensReasoning = usage.tokensReasoning;
    if (usage.billing) Object.assign(this.#billing, usage.billing);
  }

  /** A stream delivered its first output (text, a tool call, thinking): the time to first token. */
  firstToken(): void {
    this.#firstTokenAt ??= performance.now();
  }

  /** The provider answered or sent a stream event: an abandoned stream's latency runs to here. */
  touch(): void {
    this.#lastActivityAt = performance.now();
  }

  /** Marks a failure the provider reported in a body or event, not by throwing. */
  reportFailure(message: string): void {
    this.#failure ??= message;
  }

  succeed(): void {
    this.#end(this.#failure);
  }

  /**
   * Ends the call with the error it threw. A cancellation by the application
   * (an AbortSignal, `controller.abort()`) is no provider failure: like
   * `break` out of a stream, it ends the call as a success with the usage
   * seen so far, for every provider.
   */
  fail(error: unknown): void {
    if (isCancellation(error)) this.succeed();
    // `throw undefined` is still a failure.
    else this.#end(error === undefined ? "undefined was thrown" : error);
  }

  /**
   * Ends the call if the stream `target` is garbage-collected, or the process
   * is about to exit, before the stream was read to its end: a stream that is
   * created but never (fully) read is still a billed call.
   */
  watch(target: object): void {
    this.touch();
    this.recorder.watch(target, this);
  }

  /** Ends an abandoned stream's call: a success, with the usage seen and latency to its last event. */
  abandon(): void {
    this.#end(this.#failure, this.#lastActivityAt);
  }

  #end(error: unknown, endedAt?: number): void {
    if (this.#ended) return;
    this.#ended = true;
    try {
      this.recorder.record(this, {
        provider: this.provider,
        model: this.#model,
        tokens: this.#tokens(),
        startedAt: this.startedAt,
        endedAt,
        firstTokenAt: this.#firstTokenAt,
        attributes: this.attributes,
        usageHint: this.usageHint,
        error,
      });
    } catch {
      // Tracing must never break the provider call it observes.
    }
  }

  /** The counts, or `undefined` when the provider reported no usage at all. */
  #tokens(): TokenCounts | undefined {
    const uncached = this.#tokensInUncached;
    const tokensIn =
      uncached === undefined ? this.#tokensIn : uncached + (this.#tokensCachedIn ?? 0) + (this.#tokensCacheWrite ?? 0);
    if (tokensIn === undefined && this.#tokensOut === undefined) return undefined;
    return {
      tokensIn: tokensIn ?? 0,
      tokensOut: this.#tokensOut ?? 0,
      tokensCachedIn: this.#tokensCachedIn,
      tokensCacheWrite: this.#tokensCacheWrite,
      tokensReasoning: this.#tokensReasoning,
      billing: this.#billing,
    };
  }
}

/**
 * A call about to be made: its trace (none when untraced) and the request to
 * send the provider; or, when `enforceBudget` refuses it, the rejected promise
 * to return instead of calling the provider.
 */
export interface StartedCall {
  call: ProviderCall | undefined;
  params: unknown;
  refused?: Promise<never>;
}

/**
 * Starts tracing a provider call made with request `params`: takes the
 * per-call attributes out of the request (also when untraced, so the
 * provider never sees them) and merges them onto the current scope's. A call
 * refused for its budget is not traced: it was never made, and cost nothing.
 * Untraced calls are checked too: untraced() stops the trace, not the budget.
 */
export function startCall(recorder: TraceRecorder, provider: Provider, params: unknown): StartedCall {
  const scope = currentScope();
  const taken = takeCallAttributes(params);
  const request = taken ? taken.params : params;
  const own = taken && typeof taken.attributes === "object" ? taken.attributes : undefined;
  const attributes = own ? mergeAttributes(scope?.attributes, own) : scope?.attributes;
  const model = dig(request, "model");
  const refusal = recorder.budget?.check({ model, attributes });
  if (refusal) return { call: undefined, params: request, refused: rejection(refusal) };
  if (scope?.untraced) return { call: undefined, params: request };
  return { call: new ProviderCall(recorder, provider, model, attributes), params: request };
}

/**
 * A promise rejected with `error` that also answers the APIPromise methods of
 * the Stainless-generated clients (openai, @anthropic-ai/sdk), which their own
 * helpers call (Anthropic's messages.stream() uses withResponse()).
 */
function rejection(error: Error): Promise<never> {
  const rejected = Promise.reject(error);
  return Object.assign(rejected, { withResponse: () => rejected, asResponse: () => rejected });
}

function isCancellation(error: unknown): boolean {
  const name = dig(error, "name");
  // DOMException and fetch use AbortError; openai and @anthropic-ai/sdk throw APIUserAbortError.
  return name === "AbortError" || dig(error, "constructor", "name") === "APIUserAbortError";
}
