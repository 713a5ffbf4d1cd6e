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

function rates(price, tokensIn) {
  let picked = price;
  for (const tier of [...(price.tiers ?? [])].sort((a, b) => a.above_input_tokens - b.above_input_tokens)) {
    if (tokensIn > tier.above_input_tokens) picked = tier;
  }
  return picked;
}

function expectedCost(price, tokensIn, tokensOut, cached, written) {
  if (!price) return 0; // SDKs send 0 for a model the table does not know
  const r = rates(price, tokensIn);
  const uncached = Math.max(0, tokensIn - cached - written);
  return (uncached * r.input + cached * (r.cached_input ?? r.input) + written * (r.cache_write ?? r.input) + tokensOut * r.output) / 1e6;
}

const resolvesTo = new Map(vectors.resolve.map((v) => [`${v.provider}/${v.model}`, v.expect]));
function priceOf(provider, model) {
  const models = table.models[provider] ?? {};
  const key = model in models ? model : resolvesTo.get(`${provider}/${model}`);
  if (key === undefined) throw new Error(`cost vector ${provider}/${model}: add a resolve vector for this name`);
  return key === null ? undefined : models[key];
}

const vector = (provider, model, tokensIn, tokensOut, cached, written) => ({
  provider,
  model,
  tokens_in: tokensIn,
  tokens_out: tokensOut,
  ...(cached ? { tokens_cached_in: cached } : {}),
  ...(written ? { tokens_cache_write: written } : {}),
  expect_cost_usd: expectedCost(priceOf(provider, model), tokensIn, tokensOut, cached, written),
});

const cost = vectors.cost.map((v) =>
  vector(v.provider, v.model, v.tokens_in, v.tokens_out, v.tokens_cached_in ?? 0, v.tokens_cache_write ?? 0),
);
const id = (provider, model, tokensIn, tokensOut, cached, written) => [provider, model, tokensIn, tokensOut, cached, written].join("/");
const covered = new Set(cost.map((v) => id(v.provider, v.model, v.tokens_in, v.tokens_out, v.tokens_cached_in ?? 0, v.tokens_cache_write ?? 0)));
for (const [provider, models] of Object.entries(table.models)) {
  for (const [model, price] of Object.entries(models)) {
    const samples = [...SAMPLES, ...(price.tiers ?? []).flatMap((t) => tierSamples(t.above_input_tokens))];
    for (const sample of samples) {
      if (!covered.has(id(provider, model, ...sample))) cost.push(vector(provider, model, ...sample));
    }
  }
}

const line = (v) => "    " + JSON.stringify(v).replace(/,"/g, ', "').replace(/":/g, '": ');
writeFileSync(
  vectorsUrl,
  `{\n  "resolve": [\n${vectors.resolve.map(line).join(",\n")}\n  ],\n` + `  "cost": [\n${cost.map(line).join(",\n")}\n  ]\n}\n`,
);
