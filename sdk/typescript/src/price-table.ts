import bundledTable from "../../pricing/models.json" with { type: "json" };
import type { Provider } from "./trace.js";

/** USD per million tokens of each kind (web searches: USD per thousand). */
export interface Rates {
  input: number;
  output: number;
  /** Cache reads (cached input); the input rate when not given. */
  cached_input?: number;
  /** Cache writes (5-minute, the default); the input rate when not given. */
  cache_write?: number;
  /** 1-hour cache writes; a call with any is unpriced when not given. */
  cache_write_1h?: number;
  /** Audio input; a call with audio input is unpriced when not given. */
  input_audio?: number;
  /** Audio output; a call with audio output is unpriced when not given. */
  output_audio?: number;
  /** USD per thousand web searches (Gemini: grounded searches); a call with any is unpriced when not given. */
  web_search_per_1k?: number;
}

/** Rates that replace the base ones when a call's input exceeds `above_input_tokens`. */
export interface Tier extends Rates {
  above_input_tokens: number;
}

/** The processing tiers a provider bills besides standard. */
export type ServiceTier = "standard" | "batch" | "flex" | "priority";

/**
 * The service tier a provider's own word for it bills at: OpenAI's `service_tier` (`default` is
 * standard; `scale`, prepaid, says nothing), Anthropic's `usage.service_tier`, Gemini's
 * `usageMetadata.trafficType` (provisioned throughput, not billed per token, says nothing).
 */
export function billedServiceTier(value: unknown): ServiceTier | undefined {
  return BILLED_TIERS[String(value)];
}

const BILLED_TIERS: Record<string, ServiceTier | undefined> = {
  __proto__: null as never,
  default: "standard",
  standard: "standard",
  batch: "batch",
  flex: "flex",
  priority: "priority",
  ON_DEMAND: "standard",
  ON_DEMAND_PRIORITY: "priority",
  ON_DEMAND_FLEX: "flex",
};

/** Rates with their long-context tiers. */
export interface TieredRates extends Rates {
  tiers?: Tier[];
}

/** A model's price: standard rates and tiers, and the rates of the other service tiers it has. */
export interface Price extends TieredRates {
  service_tiers?: Partial<Record<Exclude<ServiceTier, "standard">, TieredRates>>;
}

/** Prices to add or replace, by provider and model name. */
export type PriceOverrides = Partial<Record<Provider, Record<string, Price>>>;

/** The shape of `sdk/pricing/models.json`. */
export interface PriceTableFile {
  schema: number;
  models: Partial<Record<Provider, Record<string, Price>>>;
  /** Other names of a model, by provider: alias to model key. */
  aliases?: Partial<Record<Provider, Record<string, string>>>;
}

/**
 * A call's usage. Cached input and cache writes are parts of `tokensIn`, 1-hour writes part of
 * the cache writes, audio input part of the uncached input, audio output part of `tokensOut`.
 */
export interface TokenUsage {
  tokensIn: number;
  tokensOut: number;
  tokensCachedIn?: number | undefined;
  tokensCacheWrite?: number | undefined;
  tokensCacheWrite1h?: number | undefined;
  tokensAudioIn?: number | undefined;
  tokensAudioOut?: number | undefined;
  webSearchRequests?: number | undefined;
  serviceTier?: ServiceTier | string | undefined;
}

/** The table schema this code reads (see sdk/pricing/README.md). */
export const PRICE_TABLE_SCHEMA = 3;

interface CheckedRates {
  input: number;
  output: number;
  cachedInput: number;
  cacheWrite: number;
  /** NaN where the price has no such rate: a call that needs it is unpriced. */
  cacheWrite1h: number;
  inputAudio: number;
  outputAudio: number;
  webSearchPer1k: number;
}

interface CheckedTiers extends CheckedRates {
  /** Ascending by threshold. */
  tiers: (CheckedRates & { above: number })[];
}

interface CheckedPrice extends CheckedTiers {
  serviceTiers: Map<string, CheckedTiers>;
}

const PROVIDERS: readonly Provider[] = ["openai", "anthropic", "gemini"];

// Step 1 of the rule in sdk/pricing/README.md: Bedrock's version suffix and regional inference
// profile prefix (the global profile is priced apart), and a fine-tune's own part of its id.
const BEDROCK_VERSION = /-v\d+:\d+$/;
const BEDROCK_REGION = /^(?:us|us-gov|eu|apac|au|jp|ca)\.(?=anthropic\.)/;
const FINE_TUNE = /^(ft:[^:]+):.*$/;
// Step 3: one trailing snapshot suffix (full, compact and Vertex dates, a preview's month and
// year, `-latest`, Gemini's `-001` versions, Anthropic's `-4-0` aliases). OpenAI's four-digit
// `-0613` snapshots are not among them: each is its own model, listed where it is priced.
const SNAPSHOT_SUFFIX = /(?:-\d{4}-\d{2}-\d{2}|-\d{8}|@\d{8}|-\d{2}-\d{4}|-latest|-\d{3}|-0)$/;

// Resolution runs on every traced (and, in the service, every ingested) call;
// model names repeat, so the outcome is memoised, bounded so that ad-hoc names
// cannot grow memory without end.
const MEMO_LIMIT = 1024;

/**
 * Prices by provider and model, resolving the names providers report (dated
 * snapshots, `models/` prefixes, Bedrock and Vertex ids, fine-tunes) to a table
 * entry with the shared rule in `sdk/pricing/README.md`, so that every SDK and
 * the service price a call the same way.
 */
export class PriceTable {
  readonly #prices = new Map<string, Map<string, CheckedPrice>>();
  readonly #aliases = new Map<string, Map<string, string>>();
  readonly #resolved = new Map<string, { key: string; price: CheckedPrice } | null>();

  constructor(overrides: PriceOverrides = {}, file: PriceTableFile = bundledTable as PriceTableFile) {
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
      // An override under an alias's name is a model of its own, so the alias gives way.
      const aliases = Object.entries(file.aliases?.[provider] ?? {}).filter(([alias]) => !prices.has(alias));
      this.#aliases.set(provider, new Map(aliases));
    }
  }

  /** The table key a reported model name resolves to, or `null`. */
  resolve(provider: Provider | string, model: string): string | null {
    return this.#lookup(provider, model)?.key ?? null;
  }

  /**
   * The cost in USD, or `null` when the model does not resolve or its price lacks a rate the call
   * needs (a service tier, 1-hour cache writes, audio, web searches). A call that used nothing (a
   * failed call without tokens) costs 0. Each part of the usage at its rate, from the tier that
   * the total input selects, summed in exactly this order and divided once by 1e6, web searches
   * added last, so that every SDK gets the same double (sdk/pricing/vectors.json).
   */
  cost(provider: Provider | string, model: string, usage: TokenUsage): number | null {
    const searches = usage.webSearchRequests ?? 0;
    if (usage.tokensIn === 0 && usage.tokensOut === 0 && searches === 0) return 0;
    const price = this.#lookup(provider, model)?.price;
    if (!price) return null;
    const tier = usage.serviceTier ?? "standard";
    const tiered = tier === "standard" ? price : price.serviceTiers.get(tier);
    if (!tiered) return null;
    let rates: CheckedRates = tiered;
    for (const t of tiered.tiers) if (usage.tokensIn > t.above) rates = t;
    const cached = usage.tokensCachedIn ?? 0;
    const written = usage.tokensCacheWrite ?? 0;
    const written1h = Math.min(usage.tokensCacheWrite1h ?? 0, written);
    const uncached = Math.max(0, usage.tokensIn - cached - written);
    const audioIn = Math.min(usage.tokensAudioIn ?? 0, uncached);
    const audioOut = Math.min(usage.tokensAudioOut ?? 0, usage.tokensOut);
    const total =
      (part(uncached - audioIn, rates.input) +
        part(cached, rates.cachedInput) +
        part(written - written1h, rates.cacheWrite) +
        part(written1h, rates.cacheWrite1h) +
        part(audioIn, rates.inputAudio) +
        part(usage.tokensOut - audioOut, rates.output) +
        part(audioOut, rates.outputAudio)) /
        1e6 +
      part(searches, rates.webSearchPer1k) / 1000;
    return Number.isNaN(total) ? null : total;
  }

  #lookup(provider: string, model: string): { key: string; price: CheckedPrice } | null {
    const memoKey = `${provider}\u0000${model}`;
    let found = this.#resolved.get(memoKey);
    if (found === undefined) {
      if (this.#resolved.size >= MEMO_LIMIT) this.#resolved.clear();
      const prices = this.#prices.get(provider);
      const key = prices ? resolveName(prices, this.#aliases.get(provider)!, model) : null;
      const price = key === null ? undefined : prices?.get(key);
      found = key !== null && price ? { key, price } : null;
      this.#resolved.set(memoKey, found);
    }
    return found;
  }
}

/** A count at a rate; a count of 0 costs 0 even where the rate is missing (NaN). */
function part(count: number, rate: number): number {
  return count === 0 ? 0 : count * rate;
}

function resolveName(prices: Map<string, CheckedPrice>, aliases: Map<string, string>, model: string): string | null {
  let name = model.trim().toLowerCase();
  name = name.slice(name.lastIndexOf("/") + 1);
  name = name.replace(BEDROCK_VERSION, "").replace(BEDROCK_REGION, "").replace(FINE_TUNE, "$1");
  if (name === "") return null;
  const exact = (candidate: string) => (prices.has(candidate) ? candidate : (aliases.get(candidate) ?? null));
  let found = exact(name);
  for (let stripped = name.replace(SNAPSHOT_SUFFIX, ""); found === null && stripped !== name; ) {
    name = stripped;
    found = exact(name);
    stripped = name.replace(SNAPSHOT_SUFFIX, "");
  }
  return found;
}

function checkedPrice(provider: string, model: string, price: Price): CheckedPrice {
  const serviceTiers = new Map<string, CheckedTiers>();
  for (const [name, rates] of Object.entries(price.service_tiers ?? {})) {
    if (rates) serviceTiers.set(name, checkedTiers(provider, `${model} (${name})`, rates));
  }
  return { ...checkedTiers(provider, model, price), serviceTiers };
}

function checkedTiers(provider: string, model: string, price: TieredRates): CheckedTiers {
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
    ![
      rates.cached_input,
      rates.cache_write,
      rates.cache_write_1h,
      rates.input_audio,
      rates.output_audio,
      rates.web_search_per_1k,
    ].every(optional)
  ) {
    throw new TypeError(
      `calltrace: price for ${provider}/${model} needs finite, non-negative input and output (and, if given, cached_input, cache_write, cache_write_1h, input_audio, output_audio and web_search_per_1k), in USD per million tokens (web searches per thousand)`,
    );
  }
  return {
    input: rates.input,
    output: rates.output,
    cachedInput: rates.cached_input ?? rates.input,
    cacheWrite: rates.cache_write ?? rates.input,
    cacheWrite1h: rates.cache_write_1h ?? Number.NaN,
    inputAudio: rates.input_audio ?? Number.NaN,
    outputAudio: rates.output_audio ?? Number.NaN,
    webSearchPer1k: rates.web_search_per_1k ?? Number.NaN,
  };
}
