import bundledTable from "../../pricing/models.json" with { type: "json" };
import type { Provider } from "./trace.js";

/** USD per million tokens. */
export interface Price {
  input: number;
  output: number;
}

/** Prices to add or replace, by provider and model name. */
export type PriceOverrides = Partial<Record<Provider, Record<string, Price>>>;

/** The shape of `sdk/pricing/models.json`. */
export interface PriceTableFile {
  schema: number;
  models: Partial<Record<Provider, Record<string, Price>>>;
}

const PROVIDERS: readonly Provider[] = ["openai", "anthropic", "gemini"];

// Step 3 of the rule in sdk/pricing/README.md: one trailing snapshot suffix.
const SNAPSHOT_SUFFIX = /(?:-\d{4}-\d{2}-\d{2}|-\d{8}|@\d{8}|-latest|-\d{3,4}|-0)$/;

/**
 * Prices by provider and model, resolving the names providers report (dated
 * snapshots, `models/` prefixes, variants) to a table entry with the shared
 * rule in `sdk/pricing/README.md`, so every SDK prices a call the same way.
 */
export class PriceTable {
  readonly #prices = new Map<Provider, Map<string, Price>>();
  // Resolution runs on every traced call; model names repeat, so memoise.
  readonly #resolved = new Map<string, string | null>();

  constructor(overrides: PriceOverrides = {}, file: PriceTableFile = bundledTable) {
    if (file.schema !== 1) {
      throw new Error(`calltrace: unsupported price table schema ${String(file.schema)}`);
    }
    for (const provider of PROVIDERS) {
      const prices = new Map<string, Price>();
      for (const source of [file.models[provider], overrides[provider]]) {
        for (const [model, price] of Object.entries(source ?? {})) {
          prices.set(model.trim().toLowerCase(), checkedPrice(provider, model, price));
        }
      }
      this.#prices.set(provider, prices);
    }
  }

  /** The table key a reported model name resolves to, or `null`. */
  resolve(provider: Provider, model: string): string | null {
    const cacheKey = `${provider}\u0000${model}`;
    let key = this.#resolved.get(cacheKey);
    if (key === undefined) {
      // Bounded: fine-tuned or ad-hoc names must not grow memory without end.
      if (this.#resolved.size >= 1024) this.#resolved.clear();
      key = resolveName(this.#prices.get(provider) ?? new Map(), model);
      this.#resolved.set(cacheKey, key);
    }
    return key;
  }

  /**
   * The cost in USD, `(tokens_in * input + tokens_out * output) / 1e6` in
   * exactly that order so that every SDK gets the same double, or `null` when
   * the model does not resolve.
   */
  cost(provider: Provider, model: string, tokensIn: number, tokensOut: number): number | null {
    const key = this.resolve(provider, model);
    const price = key === null ? undefined : this.#prices.get(provider)?.get(key);
    if (!price) return null;
    return (tokensIn * price.input + tokensOut * price.output) / 1e6;
  }
}

function resolveName(prices: Map<string, Price>, model: string): string | null {
  let name = model.trim().toLowerCase();
  name = name.slice(name.lastIndexOf("/") + 1);
  if (name === "") return null;
  if (prices.has(name)) return name;
  for (let stripped = name.replace(SNAPSHOT_SUFFIX, ""); stripped !== name; ) {
    name = stripped;
    if (prices.has(name)) return name;
    stripped = name.replace(SNAPSHOT_SUFFIX, "");
  }
  let best: string | null = null;
  for (const key of prices.keys()) {
    const next = name.charAt(key.length + 1);
    const isBoundary = name.startsWith(`${key}-`) && next !== "" && !/\d/.test(next);
    if (isBoundary && (best === null || key.length > best.length)) best = key;
  }
  return best;
}

function checkedPrice(provider: Provider, model: string, price: Price): Price {
  const valid = (n: unknown) => typeof n === "number" && Number.isFinite(n) && n >= 0;
  if (!price || !valid(price.input) || !valid(price.output)) {
    throw new TypeError(
      `calltrace: price for ${provider}/${model} needs finite, non-negative input and output (USD per million tokens)`,
    );
  }
  return { input: price.input, output: price.output };
}
