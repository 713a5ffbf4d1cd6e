import { performance } from "node:perf_hooks";
import { mergeAttributes, type TraceAttributes } from "./attributes.js";
import type { BudgetGuard } from "./budget-guard.js";
import type { PriceTable } from "./price-table.js";
import type { ProviderCall, TokenCounts, UsageHint } from "./provider-call.js";
import type { Provider, Trace } from "./trace.js";
import { wireAttributes } from "./wire-attributes.js";

/** What an instrumentation knows about one finished provider call. */
export interface CallOutcome {
  provider: Provider;
  model: string;
  /** `undefined` when the provider reported no usage. */
  tokens: TokenCounts | undefined;
  /** `performance.now()` when the call started. */
  startedAt: number;
  /** `performance.now()` when it ended, if not now (an abandoned stream). */
  endedAt?: number | undefined;
  /** `performance.now()` of a stream's first output. */
  firstTokenAt?: number | undefined;
  /** The scope's and the call's attributes (the process defaults are added here). */
  attributes?: TraceAttributes | undefined;
  usageHint?: UsageHint | undefined;
  /** Set when the call failed: the thrown error, or a message. */
  error?: unknown;
}

export interface RecorderOptions {
  apiKey: string;
  prices: PriceTable;
  send: (trace: Trace) => void;
  warn: (message: string) => void;
  /** `init()`'s attributes, under every scope's and call's. */
  defaults?: TraceAttributes;
  /** The share of successful calls traced, 0 to 1; errors are always traced. */
  sampleRate?: number;
  /** `enforceBudget`: what refuses calls past a budget, before they start. */
  budget?: BudgetGuard | undefined;
}

// Limits of the wire contract (proto/calltrace/v1/trace.proto).
const MAX_INT = 2_147_483_647;
const MAX_MODEL_LENGTH = 256;
const MAX_ERROR_LENGTH = 4096;

/**
 * Turns call outcomes into wire traces: latency, cost from the price table,
 * attributes, values clamped into what the service accepts (a trace it
 * rejects is a trace lost), and a single warning per model the table does
 * not know and per kind of invalid attribute.
 */
export class TraceRecorder {
  readonly #options: RecorderOptions;
  readonly #sampleRate: number;
  readonly #sdkMetadata: Record<string, string> | undefined;
  readonly #warned = new Set<string>();
  // Streams handed to the application and not yet read to their end.
  readonly #unread = new Set<ProviderCall>();
  readonly #collected = new FinalizationRegistry<ProviderCall>((call) => call.abandon());
  // init()'s attributes alone, made valid once: the common case of every call.
  #defaultWire: ReturnType<typeof wireAttributes> | undefined;

  /** See RecorderOptions.budget. */
  readonly budget: BudgetGuard | undefined;

  constructor(options: RecorderOptions) {
    this.#options = options;
    this.budget = options.budget;
    this.#sampleRate = options.sampleRate ?? 1;
    // Each traced success stands for 1/sampleRate calls: say so on the trace.
    this.#sdkMetadata = this.#sampleRate < 1 ? { "calltrace.sample_rate": String(this.#sampleRate) } : undefined;
  }

  record(call: ProviderCall, outcome: CallOutcome): void {
    this.#forget(call);
    if (outcome.error === undefined && this.#sampleRate < 1 && Math.random() >= this.#sampleRate) return;
    const model = (outcome.model || "unknown").slice(0, MAX_MODEL_LENGTH);
    const tokens = validTokens(outcome.tokens);
    // Cache reads and writes at their own rates (sdk/pricing/README.md).
    let cost = this.#options.prices.cost(outcome.provider, model, { ...tokens, ...tokens.billing });
    if (cost === null) {
      this.#warnOnce(
        `price:${outcome.provider}/${model}`,
        `no price for ${outcome.provider}/${model}; its traces carry cost_usd 0 (add one with init({ prices }))`,
      );
      cost = 0;
    }
    const latency = count(Math.round((outcome.endedAt ?? performance.now()) - outcome.startedAt));
    const trace: Trace = {
      provider: outcome.provider,
      model,
      tokens_in: tokens.tokensIn,
      tokens_out: tokens.tokensOut,
      latency_ms: latency,
      cost_usd: cost,
      api_key: this.#options.apiKey,
      status: outcome.error === undefined ? "success" : "error",
      // The start on the wall clock: startedAt is on the monotonic clock that began at timeOrigin.
      called_at: new Date(performance.timeOrigin + outcome.startedAt).toISOString(),
    };
    if (outcome.error !== undefined) trace.error = errorText(outcome.error);
    if (tokens.tokensCachedIn !== undefined) trace.tokens_cached_in = tokens.tokensCachedIn;
    if (tokens.tokensCacheWrite !== undefined) trace.tokens_cache_write = tokens.tokensCacheWrite;
    if (tokens.tokensReasoning !== undefined) trace.tokens_reasoning = tokens.tokensReasoning;
    const billing = tokens.billing;
    if (billing.serviceTier !== undefined) trace.service_tier = billing.serviceTier;
    if (billing.tokensCacheWrite1h !== undefined) trace.tokens_cache_write_1h = billing.tokensCacheWrite1h;
    if (billing.tokensAudioIn !== undefined) trace.tokens_audio_in = billing.tokensAudioIn;
    if (billing.tokensAudioOut !== undefined) trace.tokens_audio_out = billing.tokensAudioOut;
    if (billing.webSearchRequests !== undefined) trace.web_search_requests = billing.webSearchRequests;
    if (outcome.firstTokenAt !== undefined) {
      trace.ttft_ms = Math.min(latency, count(Math.round(outcome.firstTokenAt - outcome.startedAt)));
    }
    let usageMissing: Record<string, string> | undefined;
    if (outcome.tokens === undefined && outcome.error === undefined) {
      // A success without usage is not a free call: say that its usage is unknown.
      usageMissing = { ...this.#sdkMetadata, "calltrace.usage": "missing" };
      if (outcome.usageHint) this.#warnOnce(outcome.usageHint.key, outcome.usageHint.message);
    }
    Object.assign(trace, this.#attributes(outcome.attributes, usageMissing));
    this.#options.send(trace);
  }

  /** See ProviderCall.watch(). */
  watch(target: object, call: ProviderCall): void {
    if (call.ended) return;
    this.#collected.unregister(call);
    this.#collected.register(target, call, call);
    this.#unread.add(call);
  }

  /** Ends the calls of streams still unread: the process is about to exit, so nothing will read them. */
  abandonUnread(): void {
    for (const call of [...this.#unread]) call.abandon();
  }

  #forget(call: ProviderCall): void {
    if (this.#unread.delete(call)) this.#collected.unregister(call);
  }

  #attributes(scoped: TraceAttributes | undefined, extra: Record<string, string> | undefined) {
    const { defaults } = this.#options;
    const warn = (key: string, message: string) => this.#warnOnce(`attribute:${key}`, message);
    if (scoped === undefined && extra === undefined) {
      this.#defaultWire ??= wireAttributes(defaults ?? {}, this.#sdkMetadata, warn);
      return this.#defaultWire;
    }
    const merged = scoped === undefined ? defaults : mergeOnto(defaults, scoped);
    return wireAttributes(merged ?? {}, extra ?? this.#sdkMetadata, warn);
  }

  #warnOnce(key: string, message: string): void {
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    this.#options.warn(message);
  }
}

function mergeOnto(defaults: TraceAttributes | undefined, scoped: TraceAttributes): TraceAttributes {
  return defaults ? mergeAttributes(defaults, scoped) : scoped;
}

/** Counts the service accepts: whole, 0 to 2^31-1, and the parts within their totals. */
function validTokens(tokens: TokenCounts | undefined): TokenCounts {
  const tokensIn = count(tokens?.tokensIn ?? 0);
  const tokensOut = count(tokens?.tokensOut ?? 0);
  const cachedIn = part(tokens?.tokensCachedIn, tokensIn);
  const cacheWrite = part(tokens?.tokensCacheWrite, tokensIn - (cachedIn ?? 0));
  const billing = tokens?.billing ?? {};
  // Billing modes are sent only when they change the price: not standard, not 0.
  return {
    tokensIn,
    tokensOut,
    tokensCachedIn: cachedIn,
    tokensCacheWrite: cacheWrite,
    tokensReasoning: part(tokens?.tokensReasoning, tokensOut),
    billing: {
      serviceTier: billing.serviceTier === "standard" ? undefined : billing.serviceTier,
      tokensCacheWrite1h: positive(part(billing.tokensCacheWrite1h, cacheWrite ?? 0)),
      tokensAudioIn: positive(part(billing.tokensAudioIn, tokensIn - (cachedIn ?? 0) - (cacheWrite ?? 0))),
      tokensAudioOut: positive(part(billing.tokensAudioOut, tokensOut)),
      webSearchRequests: positive(part(billing.webSearchRequests, MAX_INT)),
    },
  };
}

function positive(value: number | undefined): number | undefined {
  return value === 0 ? undefined : value;
}

function part(value: number | undefined, within: number): number | undefined {
  return value === undefined ? undefined : Math.min(count(value), within);
}

function count(value: number): number {
  return Number.isFinite(value) ? Math.min(MAX_INT, Math.max(0, Math.trunc(value))) : 0;
}

function errorText(error: unknown): string {
  let text: string;
  if (error instanceof Error) {
    // The class name tells a rate limit from a bad request at a glance. Some
    // libraries (openai) leave `name` as "Error" on their own classes.
    const name = error.name && error.name !== "Error" ? error.name : error.constructor?.name;
    text = name && name !== "Error" ? `${name}: ${error.message}` : error.message;
  } else {
    text = typeof error === "string" ? error : String(error);
  }
  return (text || "error").slice(0, MAX_ERROR_LENGTH);
}
