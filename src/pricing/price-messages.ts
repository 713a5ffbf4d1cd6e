import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  type CustomPrice,
  CustomPriceSchema,
  type CustomPriceSpec,
  CustomPriceSpecSchema,
  PriceMatch,
  type PriceRates,
  PriceRatesSchema,
  type RepriceJob,
  RepriceJobSchema,
  RepriceState,
  type TieredPrice,
  TieredPriceSchema,
} from "../../gen/calltrace/v1/price_service_pb.js";
import type { Price, Rates, ServiceTier, TieredRates } from "../../sdk/typescript/src/price-table.js";
import type { CustomPriceInput, CustomPriceRecord, PriceMatchKind, RepriceJobRecord } from "../store/price-store.js";

// Conversions between PriceService's messages and the catalog's shape the store and the pricing keep.

const matchKinds: Record<PriceMatchKind, PriceMatch> = { exact: PriceMatch.EXACT, prefix: PriceMatch.PREFIX, regex: PriceMatch.REGEX };
const otherTiers = ["batch", "flex", "priority"] as const satisfies readonly Exclude<ServiceTier, "standard">[];
const optionalRates = ["cached_input", "cache_write", "cache_write_1h", "input_audio", "output_audio", "web_search_per_1k"] as const;
const messageField = {
  cached_input: "cachedInput",
  cache_write: "cacheWrite",
  cache_write_1h: "cacheWrite1h",
  input_audio: "inputAudio",
  output_audio: "outputAudio",
  web_search_per_1k: "webSearchPer1k",
} as const;

function ratesOf(message: PriceRates | undefined): Rates {
  const rates: Rates = { input: message?.input ?? 0, output: message?.output ?? 0 };
  for (const name of optionalRates) {
    const value = message?.[messageField[name]];
    if (value !== undefined) rates[name] = value;
  }
  return rates;
}

function tieredOf(message: TieredPrice): TieredRates {
  const tiered: TieredRates = ratesOf(message.rates);
  if (message.tiers.length > 0) tiered.tiers = message.tiers.map((t) => ({ ...ratesOf(t.rates), above_input_tokens: Number(t.aboveInputTokens) }));
  return tiered;
}

function ratesMessage(rates: Rates): PriceRates {
  const message = create(PriceRatesSchema, { input: rates.input, output: rates.output });
  for (const name of optionalRates) if (rates[name] !== undefined) message[messageField[name]] = rates[name];
  return message;
}

function tieredMessage(tiered: TieredRates): TieredPrice {
  return create(TieredPriceSchema, {
    rates: ratesMessage(tiered),
    tiers: (tiered.tiers ?? []).map((t) => ({ aboveInputTokens: BigInt(t.above_input_tokens), rates: ratesMessage(t) })),
  });
}

/** A spec as the store keeps it; the matching kind is `undefined` for a value the enum does not define. */
export function priceInputOf(spec: CustomPriceSpec): CustomPriceInput {
  const matchKind = (Object.keys(matchKinds) as PriceMatchKind[]).find((k) => matchKinds[k] === spec.match);
  const price: Price = spec.standard ? tieredOf(spec.standard) : { input: Number.NaN, output: Number.NaN };
  for (const tier of otherTiers) {
    const given = spec[tier];
    if (given) (price.service_tiers ??= {})[tier] = tieredOf(given);
  }
  return {
    provider: spec.provider,
    matchKind: matchKind as PriceMatchKind,
    pattern: spec.pattern,
    price,
    effectiveFrom: spec.effectiveFrom ? timestampDate(spec.effectiveFrom) : undefined,
    effectiveUntil: spec.effectiveUntil ? timestampDate(spec.effectiveUntil) : undefined,
  };
}

export function priceMessage(record: CustomPriceRecord): CustomPrice {
  const spec = create(CustomPriceSpecSchema, {
    provider: record.provider,
    match: matchKinds[record.matchKind],
    pattern: record.pattern,
    standard: tieredMessage(record.price),
    ...(record.effectiveFrom ? { effectiveFrom: timestampFromDate(record.effectiveFrom) } : {}),
    ...(record.effectiveUntil ? { effectiveUntil: timestampFromDate(record.effectiveUntil) } : {}),
  });
  for (const tier of otherTiers) {
    const rates = record.price.service_tiers?.[tier];
    if (rates) spec[tier] = tieredMessage(rates);
  }
  return create(CustomPriceSchema, { id: record.id, spec, createdAt: timestampFromDate(record.createdAt), updatedAt: timestampFromDate(record.updatedAt) });
}

const states = { running: RepriceState.RUNNING, done: RepriceState.DONE, failed: RepriceState.FAILED } as const;

export function repriceJobMessage(job: RepriceJobRecord): RepriceJob {
  return create(RepriceJobSchema, {
    id: job.id,
    from: timestampFromDate(job.from),
    until: timestampFromDate(job.until),
    state: states[job.state],
    total: BigInt(job.total),
    done: BigInt(job.done),
    changed: BigInt(job.changed),
    error: job.error,
    createdAt: timestampFromDate(job.createdAt),
    updatedAt: timestampFromDate(job.updatedAt),
  });
}
