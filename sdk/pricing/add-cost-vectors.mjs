// Keeps vectors.json in step with models.json: appends the sample cost vectors
// every model must have (so a new price cannot land untested) and recomputes
// the expectation of every cost vector from the table (so a price change
// updates them). Run after editing models.json:
//   node sdk/pricing/add-cost-vectors.mjs
// A vector's model name is priced as the entry the `resolve` vectors say it
// resolves to (or as itself when it is a key); any other name fails here.
// Expectations are IEEE-754 doubles from the documented formula and operation
// order (README.md, "Cost"), written out here on purpose rather than imported
// from an SDK: this is the reference the SDKs are checked against.
import { readFileSync, writeFileSync } from "node:fs";

const here = new URL(".", import.meta.url);
const table = JSON.parse(readFileSync(new URL("models.json", here), "utf8"));
const vectorsUrl = new URL("vectors.json", here);
const vectors = JSON.parse(readFileSync(vectorsUrl, "utf8"));

// [tokens_in, tokens_out, tokens_cached_in, tokens_cache_write]: non-round
// products, the integer limit, cache reads, cache writes, both together.
const SAMPLES = [
  [1234, 567, 0, 0],
  [1_000_000, 1_000_000, 0, 0],
  [2_147_483_647, 1, 0, 0],
  [98_765, 4321, 87_654, 0],
  [98_765, 4321, 0, 54_321],
  [1_000_000, 0, 600_000, 300_000],
];
// For tiered models: just at and just above each threshold, mostly cached.
const tierSamples = (above) => [
  [above, 1000, above / 2, 0],
  [above + 1, 1000, above / 2, 1000],
];
// Billing modes, each where the model has its rate: a service tier, 1-hour cache writes, audio
// input and output, web searches; and one call that used nothing (a failed call: cost 0).
const BILLING = { tokens_in: 54_321, tokens_out: 4321 };
function billingSamples(price) {
  const samples = Object.keys(price.service_tiers ?? {}).map((tier) => ({ ...BILLING, tokens_cached_in: 12_345, service_tier: tier }));
  if (price.cache_write_1h !== undefined) samples.push({ ...BILLING, tokens_cache_write: 20_000, tokens_cache_write_1h: 15_000 });
  if (price.input_audio !== undefined) samples.push({ ...BILLING, tokens_audio_in: 30_000 });
  if (price.output_audio !== undefined) samples.push({ ...BILLING, tokens_audio_out: 4000 });
  if (price.web_search_per_1k !== undefined) samples.push({ ...BILLING, web_search_requests: 3 });
  samples.push({ tokens_in: 0, tokens_out: 0 });
  return samples;
}

function rates(price, tokensIn) {
  let picked = price;
  for (const tier of [...(price.tiers ?? [])].sort((a, b) => a.above_input_tokens - b.above_input_tokens)) {
    if (tokensIn > tier.above_input_tokens) picked = tier;
  }
  return picked;
}

// A count at a rate; 0 of a rate the price lacks costs 0, any more leaves the call unpriced (NaN).
const part = (count, rate) => (count === 0 ? 0 : count * (rate ?? Number.NaN));

function expectedCost(price, v) {
  const searches = v.web_search_requests ?? 0;
  if (v.tokens_in === 0 && v.tokens_out === 0 && searches === 0) return 0; // a call that used nothing
  if (!price) return 0; // SDKs send 0 for a model the table does not know
  const tiered = v.service_tier === undefined || v.service_tier === "standard" ? price : price.service_tiers?.[v.service_tier];
  if (!tiered) return 0;
  const r = rates(tiered, v.tokens_in);
  const cached = v.tokens_cached_in ?? 0;
  const written = v.tokens_cache_write ?? 0;
  const written1h = Math.min(v.tokens_cache_write_1h ?? 0, written);
  const uncached = Math.max(0, v.tokens_in - cached - written);
  const audioIn = Math.min(v.tokens_audio_in ?? 0, uncached);
  const audioOut = Math.min(v.tokens_audio_out ?? 0, v.tokens_out);
  const total =
    (part(uncached - audioIn, r.input) +
      part(cached, r.cached_input ?? r.input) +
      part(written - written1h, r.cache_write ?? r.input) +
      part(written1h, r.cache_write_1h) +
      part(audioIn, r.input_audio) +
      part(v.tokens_out - audioOut, r.output) +
      part(audioOut, r.output_audio)) /
      1e6 +
    part(searches, r.web_search_per_1k) / 1000;
  return Number.isNaN(total) ? 0 : total;
}

const resolvesTo = new Map(vectors.resolve.map((v) => [`${v.provider}/${v.model}`, v.expect]));
function priceOf(provider, model) {
  const models = table.models[provider] ?? {};
  const key = model in models ? model : (table.aliases?.[provider]?.[model] ?? resolvesTo.get(`${provider}/${model}`));
  if (key === undefined) throw new Error(`cost vector ${provider}/${model}: add a resolve vector for this name`);
  return key === null ? undefined : models[key];
}

const FIELDS = [
  "tokens_cached_in",
  "tokens_cache_write",
  "tokens_cache_write_1h",
  "tokens_audio_in",
  "tokens_audio_out",
  "web_search_requests",
  "service_tier",
];
const vector = (provider, model, counts) => {
  const v = { provider, model, tokens_in: counts.tokens_in, tokens_out: counts.tokens_out };
  for (const field of FIELDS) if (counts[field]) v[field] = counts[field];
  return { ...v, expect_cost_usd: expectedCost(priceOf(provider, model), v) };
};
const fromTuple = ([tokens_in, tokens_out, tokens_cached_in, tokens_cache_write]) => ({ tokens_in, tokens_out, tokens_cached_in, tokens_cache_write });

const cost = vectors.cost.map((v) => vector(v.provider, v.model, v));
const id = (provider, model, counts) => [provider, model, counts.tokens_in, counts.tokens_out, ...FIELDS.map((f) => counts[f] ?? 0)].join("/");
const covered = new Set(cost.map((v) => id(v.provider, v.model, v)));
for (const [provider, models] of Object.entries(table.models)) {
  for (const [model, price] of Object.entries(models)) {
    const samples = [
      ...SAMPLES.map(fromTuple),
      ...(price.tiers ?? []).flatMap((t) => tierSamples(t.above_input_tokens)).map(fromTuple),
      ...billingSamples(price),
    ];
    for (const sample of samples) {
      if (!covered.has(id(provider, model, sample))) cost.push(vector(provider, model, sample));
    }
  }
}

const line = (v) => "    " + JSON.stringify(v).replace(/,"/g, ', "').replace(/":/g, '": ');
writeFileSync(
  vectorsUrl,
  `{\n  "resolve": [\n${vectors.resolve.map(line).join(",\n")}\n  ],\n` + `  "cost": [\n${cost.map(line).join(",\n")}\n  ]\n}\n`,
);
