import bundledTable from "../../pricing/models.json" with { type: "json" };
import type { Provider } from "./trace.js";

/** USD per million tokens of each kind. */
export interface Rates {
  input: number;
  output: number;
  /** Cache reads (cached input); the input rate when not given. */
  cached_input?: number;
  /** Cache writes; the input rate when not given. */
  cache_write?: number;
}

/** Rates that replace the base ones when a call's input exceeds `above_input_tokens`. */
export interface Tier extends Rates {
  above_input_tokens: number;
}

/** A model's price: base rates, plus long-context tiers where the provider has them. */
export interface Price extends Rates {
  tiers?: Tier[];
}

/** Prices to add or replace, by provider and model name. */
export type PriceOverrides = Partial<Record<Provider, Record<string, Price>>>;

/** The shape of `sdk/pricing/models.json`. */
export interface PriceTableFile {
  schema: number;
  models: Partial<Record<Provider, Record<string, Price>>>;
}

/** A call's token counts; cached input and cache writes are parts of `tokensIn`. */
export interface TokenUsage {
  tokensIn: number;
  tokensOut: number;
  tokensCachedIn?: number;
  tokensCacheWrite?: number;
}

/** The table schema this code reads (see sdk/pricing/README.md). */
export const PRICE_TABLE_SCHEMA = 2;

interface CheckedRates {
  input: number;
  output: number;
  cachedInput: number;
  cacheWrite: number;
}

interface CheckedPrice extends CheckedRates {
  /** Ascending by threshold. */
  tiers: (CheckedRates & { above: number })[];
}

const PROVIDERS: readonly Provider[] = ["openai", "anthropic", "gemini"];

// Step 3 of the rule in sdk/pricing/README.md: one trailing snapshot suffix.
const SNAPSHOT_SUFFIX = /(?:-\d{4}-\d{2}-\d{2}|-\d{8}|@\d{8}|-latest|-\d{3,4}|-0)$/;

// Resolution runs on every traced (and, in the service, every ingested) call;
// model names repeat, so the outcome is memoised, bounded so that ad-hoc names
// cannot grow memory without end.
const MEMO_LIMIT = 1024;

/**
 * Prices by provider and model, resolving the names providers report (dated
 * snapshots, `models/` prefixes) to a table entry with the shared rule in
 * `sdk/pricing/README.md`, so that every SDK and the service price a call the
 * same way.
 */
export class PriceTable {
  readonly #prices = new Map<string, Map<string, CheckedPrice>>();
  readonly #resolved = new Map<string, { key: string; price: CheckedPrice } | null>();

  constructor(overrides: PriceOverrides = {}, file: PriceTableFile = bundledTable) {
    if (file.schema !== PRICE_TABLE_SCHEMA) {
      throw new Error(`calltrace: unsupported price table schema ${String(file.schema)}`);
    }
    for (const provider of PROVIDERS) {
      const prices = new Map<string, CheckedPrice>();
      for (const source of [file.models[provider], overrides[provider]]) {
        for (const [model, price] of Object.entries(source ?? {})) {
          prices.set(model.trim().toLowerCase(), checkedPrice(provider, model, price));
        }
      }
      this.#prices.set(provider, prices);
    }
  }

  /** The table key a reported model name resolves to, or `null`. */
  resolve(provider: Provider | string, model: string): string | null {
    return this.#lookup(provider, model)?.key ?? null;
  }

  /**
   * The cost in USD, or `null` when the model does not resolve. Uncached input
   * at the input rate, cache reads at the cached rate, cache writes at the
   * cache-write rate, output at the output rate, all from the tier that the
   * total input selects; summed in exactly this order and divided once by 1e6,
   * so that every SDK gets the same double (sdk/pricing/vectors.json).
   */
  cost(provider: Provider | string, model: string, usage: TokenUsage): number | null {
    const price = this.#lookup(provider, model)?.price;
    if (!price) return null;
    const cached = usage.tokensCachedIn ?? 0;
    const written = usage.tokensCacheWrite ?? 0;
    const uncached = Math.max(0, usage.tokensIn - cached - written);
    let rates: CheckedRates = price;
    for (const tier of price.tiers) if (usage.tokensIn > tier.above) rates = tier;
    return (
      (uncached * rates.input +
        cached * rates.cachedInput +
        written * rates.cacheWrite +
        usage.tokensOut * rates.output) /
      1e6
    );
  }

  #lookup(provider: string, model: string): { key: string; price: CheckedPrice } | null {
    const memoKey = `${provider}\u0000${model}`;
    let found = this.#resolved.get(memoKey);
    if (found === undefined) {
      if (this.#resolved.size >= MEMO_LIMIT) this.#resolved.clear();
      const prices = this.#prices.get(provider);
      const key = prices ? resolveName(prices, model) : null;
      const price = key === null ? undefined : prices?.get(key);
      found = key !== null && price ? { key, price } : null;
      this.#resolved.set(memoKey, found);
    }
    return found;
  }
}

function resolveName(prices: Map<string, CheckedPrice>, model: string): string | null {
  let name = model.trim().toLowerCase();
  name = name.slice(name.lastIndexOf("/") + 1);
  if (name === "") return null;
  if (prices.has(name)) return name;
  for (let stripped = name.replace(SNAPSHOT_SUFFIX, ""); stripped !== name; ) {
    name = stripped;
    if (prices.has(name)) return name;
    stripped = name.replace(SNAPSHOT_SUFFIX, "");
  }
  return null;
}

function checkedPrice(provider: string, model: string, price: Price): CheckedPrice {
  const base = checkedRates(provider, model, price);
  const tiers = (price.tiers ?? []).map((tier) => {
    if (!tier || !(Number.isSafeInteger(tier.above_input_tokens) && tier.above_input_tokens > 0)) {
      throw new TypeError(
        `calltrace: a price tier for ${provider}/${model} needs a positive integer above_input_tokens`,
      );
    }
    return { ...checkedRates(provider, model, tier), above: tier.above_input_tokens };
  });
  tiers.sort((a, b) => a.above - b.above);
  return { ...base, tiers };
}

function checkedRates(provider: string, model: string, rates: Rates): CheckedRates {
  const valid = (n: unknown) => typeof n === "number" && Number.isFinite(n) && n >= 0;
  const optional = (n: unknown) => n === undefined || valid(n);
  if (
    !rates ||
    !valid(rates.input) ||
    !valid(rates.output) ||
    !optional(rates.cached_input) ||
    !optional(rates.cache_write)
  ) {
    throw new TypeError(
      `calltrace: price for ${provider}/${model} needs finite, non-negative input and output (and, if given, cached_input and cache_write), in USD per million tokens`,
    );
  }
  return {
    input: rates.input,
    output: rates.output,
    cachedInput: rates.cached_input ?? rates.input,
    cacheWrite: rates.cache_write ?? rates.input,
  };
}
