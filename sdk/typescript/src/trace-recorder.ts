import { performance } from "node:perf_hooks";
import type { PriceTable } from "./price-table.js";
import type { Provider, Trace } from "./trace.js";

/** What an instrumentation knows about one finished provider call. */
export interface CallOutcome {
  provider: Provider;
  model: string;
  tokensIn: number;
  tokensOut: number;
  /** `performance.now()` when the call started. */
  startedAt: number;
  /** Set when the call failed: the thrown error, or a message. */
  error?: unknown;
}

// Limits of the wire contract (D5).
const MAX_INT = 2_147_483_647;
const MAX_MODEL_LENGTH = 256;
const MAX_ERROR_LENGTH = 4096;

/**
 * Turns call outcomes into wire traces: latency, cost from the price table,
 * values clamped into what the service accepts (a trace it rejects is a trace
 * lost), and a single warning per model the table does not know.
 */
export class TraceRecorder {
  readonly #apiKey: string;
  readonly #prices: PriceTable;
  readonly #send: (trace: Trace) => void;
  readonly #warn: (message: string) => void;
  readonly #unpriced = new Set<string>();

  constructor(apiKey: string, prices: PriceTable, send: (trace: Trace) => void, warn: (message: string) => void) {
    this.#apiKey = apiKey;
    this.#prices = prices;
    this.#send = send;
    this.#warn = warn;
  }

  record(outcome: CallOutcome): void {
    const model = (outcome.model || "unknown").slice(0, MAX_MODEL_LENGTH);
    const tokensIn = count(outcome.tokensIn);
    const tokensOut = count(outcome.tokensOut);
    let cost = this.#prices.cost(outcome.provider, model, { tokensIn, tokensOut });
    if (cost === null) {
      this.#warnUnpriced(outcome.provider, model);
      cost = 0;
    }
    const trace: Trace = {
      provider: outcome.provider,
      model,
      tokens_in: tokensIn,
      tokens_out: tokensOut,
      latency_ms: count(Math.round(performance.now() - outcome.startedAt)),
      cost_usd: cost,
      api_key: this.#apiKey,
      status: outcome.error === undefined ? "success" : "error",
    };
    if (outcome.error !== undefined) trace.error = errorText(outcome.error);
    this.#send(trace);
  }

  #warnUnpriced(provider: Provider, model: string): void {
    const key = `${provider}/${model}`;
    if (this.#unpriced.has(key)) return;
    this.#unpriced.add(key);
    this.#warn(`no price for ${key}; its traces carry cost_usd 0 (add one with init({ prices }))`);
  }
}

function count(value: number): number {
  return Number.isFinite(value) ? Math.min(MAX_INT, Math.max(0, Math.trunc(value))) : 0;
}

function errorText(error: unknown): string {
  let text: string;
  if (error instanceof Error) {
    // The class name tells a rate limit from a bad request at a glance.
    text = error.name && error.name !== "Error" ? `${error.name}: ${error.message}` : error.message;
  } else {
    text = typeof error === "string" ? error : String(error);
  }
  return (text || "error").slice(0, MAX_ERROR_LENGTH);
}
