import type { TraceAttributes } from "./attributes.js";
import type { PriceOverrides } from "./price-table.js";

/** The hosted service; self-hosters pass `endpoint` or set CALLTRACE_ENDPOINT. */
export const DEFAULT_ENDPOINT = "https://api.calltrace.dev/v1/traces";

/** Options of `init()`. Every one is optional. */
export interface InitOptions {
  /** The calltrace API key (`ct_...`). Default: the CALLTRACE_API_KEY environment variable. Never logged. */
  apiKey?: string;
  /**
   * Full URL of the trace endpoint, ending in `/v1/traces`, for a self-hosted
   * server. Default: CALLTRACE_ENDPOINT, else the hosted service.
   */
  endpoint?: string;
  /**
   * Prices to add or replace, in USD per million tokens: `{ openai: { "my-model": { input: 1, output: 2 } } }`;
   * `cached_input`, `cache_write` (default: `input`) and long-context `tiers` as in sdk/pricing/models.json.
   */
  prices?: PriceOverrides;
  /** Traces held in memory while the service is slow or down; the oldest are dropped beyond this. Default 10000. */
  maxQueueSize?: number;
  /** Traces in flight at once (pipelined on one connection). Default 16. */
  concurrency?: number;
  /** Time allowed for one send before it counts as a network error. Default 10000 ms. */
  requestTimeoutMs?: number;
  /** Attempts per trace, the first included, on 429, 503 and network errors. Default 5. */
  maxAttempts?: number;
  /** Backoff before the first retry; it doubles for each further one. Default 500 ms. */
  retryBaseDelayMs?: number;
  /** Longest wait between attempts; a longer `retry_after` (a spent monthly quota) drops the trace. Default 60000 ms. */
  retryMaxDelayMs?: number;
  /** How long pending traces may hold the process when it would otherwise exit. Default 10000 ms. */
  exitFlushTimeoutMs?: number;
  /** Where warnings go (an unknown model, a rejected key). Default: `process.emitWarning`. */
  onWarning?: (message: string) => void;
  /** `false` switches tracing off: nothing is patched or sent. CALLTRACE_DISABLED=1 (or true) does too, whatever this says. */
  enabled?: boolean;
  /** The share of successful calls traced, 0 to 1. Errors are always traced. Default 1. */
  sampleRate?: number;
  /** The deployment, such as `production`, on every trace; at most 64 characters. */
  environment?: string;
  /** Tags on every trace; scopes and calls add theirs. */
  tags?: readonly string[];
  /** Metadata on every trace; scopes and calls add to it and override its keys. */
  metadata?: Readonly<Record<string, string>>;
  /**
   * Refuses a provider call with a `BudgetExceeded` error, without calling the provider, once a spend
   * budget that counts it is used up. The budget status comes from the service's GET /v1/budget,
   * refreshed in the background; calls proceed whenever it cannot be read. Default `false`.
   */
  enforceBudget?: boolean;
  /** How often `enforceBudget` refreshes the budget status. Default 5000 ms. */
  budgetRefreshMs?: number;
}

/** Options with every default filled in and every value checked. */
export interface ResolvedOptions {
  apiKey: string | undefined;
  endpoint: URL;
  prices: PriceOverrides;
  maxQueueSize: number;
  concurrency: number;
  requestTimeoutMs: number;
  maxAttempts: number;
  retryBaseDelayMs: number;
  retryMaxDelayMs: number;
  exitFlushTimeoutMs: number;
  warn: (message: string) => void;
  enabled: boolean;
  sampleRate: number;
  defaults: TraceAttributes;
  enforceBudget: boolean;
  budgetRefreshMs: number;
}

/**
 * Fills in defaults from the environment and checks values, throwing a
 * TypeError for a setting that cannot work (a malformed endpoint): a mistake
 * in configuration should show at start-up, not as traces silently lost.
 */
export function resolveOptions(options: InitOptions, env: NodeJS.ProcessEnv): ResolvedOptions {
  const endpointText = options.endpoint ?? env.CALLTRACE_ENDPOINT ?? DEFAULT_ENDPOINT;
  let endpoint: URL;
  try {
    endpoint = new URL(endpointText);
  } catch {
    throw new TypeError(`calltrace: endpoint is not a URL: ${endpointText}`);
  }
  if (endpoint.protocol !== "http:" && endpoint.protocol !== "https:") {
    throw new TypeError(`calltrace: endpoint must be an http or https URL: ${endpointText}`);
  }
  const apiKey = (options.apiKey ?? env.CALLTRACE_API_KEY)?.trim() || undefined;
  // It goes into a header line: anything but printable ASCII could break it.
  if (apiKey !== undefined && !/^[\x21-\x7e]+$/.test(apiKey)) {
    throw new TypeError("calltrace: the API key may only hold printable ASCII characters");
  }
  return {
    apiKey,
    endpoint,
    prices: options.prices ?? {},
    maxQueueSize: positive("maxQueueSize", options.maxQueueSize, 10_000),
    concurrency: positive("concurrency", options.concurrency, 16),
    requestTimeoutMs: positive("requestTimeoutMs", options.requestTimeoutMs, 10_000),
    maxAttempts: positive("maxAttempts", options.maxAttempts, 5),
    retryBaseDelayMs: positive("retryBaseDelayMs", options.retryBaseDelayMs, 500),
    retryMaxDelayMs: positive("retryMaxDelayMs", options.retryMaxDelayMs, 60_000),
    exitFlushTimeoutMs: positive("exitFlushTimeoutMs", options.exitFlushTimeoutMs, 10_000),
    warn: options.onWarning ?? ((message) => process.emitWarning(message, { type: "CallTraceWarning" })),
    // Either switch turns tracing off: the variable lets an operator do it without a code change.
    enabled: options.enabled !== false && !/^(1|true)$/i.test(env.CALLTRACE_DISABLED?.trim() ?? ""),
    sampleRate: fraction("sampleRate", options.sampleRate, 1),
    defaults: { environment: options.environment, tags: options.tags, metadata: options.metadata },
    enforceBudget: options.enforceBudget === true,
    budgetRefreshMs: positive("budgetRefreshMs", options.budgetRefreshMs, 5_000),
  };
}

function fraction(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !(value >= 0 && value <= 1)) {
    throw new TypeError(`calltrace: ${name} must be a number from 0 to 1, got ${String(value)}`);
  }
  return value;
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new TypeError(`calltrace: ${name} must be a positive integer, got ${String(value)}`);
  }
  return value;
}
