/** The `provider` values the service accepts (spec, Trace fields). */
export type Provider = "openai" | "anthropic" | "gemini";

/**
 * The JSON body of `POST /v1/traces`, with the spec's field names. `error` is
 * present only when `status` is `"error"` (D6).
 */
export interface Trace {
  provider: Provider;
  model: string;
  tokens_in: number;
  tokens_out: number;
  latency_ms: number;
  cost_usd: number;
  api_key: string;
  status: "success" | "error";
  error?: string;
}
