import type { ServiceTier } from "./price-table.js";

/** The `provider` values the service accepts (spec, Trace fields). */
export type Provider = "openai" | "anthropic" | "gemini";

/**
 * The JSON body of `POST /v1/traces`, with the wire contract's field names
 * (proto/calltrace/v1/trace.proto). `error` is present only when `status` is
 * `"error"`; the optional fields only when known or set.
 */
export interface Trace {
  provider: Provider;
  model: string;
  /** Every input token, cached or not. */
  tokens_in: number;
  /** Every billed output token, reasoning included. */
  tokens_out: number;
  latency_ms: number;
  cost_usd: number;
  api_key: string;
  status: "success" | "error";
  error?: string;
  /** Part of `tokens_in`: read from the provider's prompt cache. */
  tokens_cached_in?: number;
  /** Part of `tokens_in`: written to the provider's prompt cache. */
  tokens_cache_write?: number;
  /** Part of `tokens_out`: spent reasoning (thinking). */
  tokens_reasoning?: number;
  user_id?: string;
  session_id?: string;
  tags?: string[];
  metadata?: Record<string, string>;
  environment?: string;
  /** Streams only: milliseconds from the call to its first output token. */
  ttft_ms?: number;
  /** The processing tier the call was billed at; omitted means standard. */
  service_tier?: ServiceTier;
  /** Part of `tokens_cache_write`: written to a 1-hour cache. */
  tokens_cache_write_1h?: number;
  /** Part of `tokens_in` (uncached): audio. */
  tokens_audio_in?: number;
  /** Part of `tokens_out`: audio. */
  tokens_audio_out?: number;
  /** Web searches (Gemini: grounding searches) billed for the call. */
  web_search_requests?: number;
  /** When the call started (RFC 3339): the service places the trace there, however late retries deliver it. */
  called_at?: string;
}
