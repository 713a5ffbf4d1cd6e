// Appends cost vectors for every model in models.json that has none yet, so a
// new price cannot land untested. Run after editing models.json:
//   node sdk/pricing/add-cost-vectors.mjs
// Expectations are IEEE-754 doubles computed with the documented formula and
// operation order, (tokens_in * input + tokens_out * output) / 1e6, which both
// SDKs must reproduce bit for bit.
import { readFileSync, writeFileSync } from "node:fs";

const here = new URL(".", import.meta.url);
const table = JSON.parse(readFileSync(new URL("models.json", here), "utf8"));
const vectorsUrl = new URL("vectors.json", here);
const vectors = JSON.parse(readFileSync(vectorsUrl, "utf8"));

// Token counts chosen to exercise non-round products and the integer limit.
const SAMPLES = [
  [1234, 567],
  [1_000_000, 1_000_000],
  [2_147_483_647, 1],
];

const covered = new Set(vectors.cost.map((v) => `${v.provider}/${v.model}`));
for (const [provider, models] of Object.entries(table.models)) {
  for (const [model, price] of Object.entries(models)) {
    if (covered.has(`${provider}/${model}`)) continue;
    for (const [tokensIn, tokensOut] of SAMPLES) {
      vectors.cost.push({
        provider,
        model,
        tokens_in: tokensIn,
        tokens_out: tokensOut,
        expect_cost_usd: (tokensIn * price.input + tokensOut * price.output) / 1e6,
      });
    }
  }
}

const line = (v) => "    " + JSON.stringify(v).replace(/,"/g, ', "').replace(/":/g, '": ');
writeFileSync(
  vectorsUrl,
  `{\n  "resolve": [\n${vectors.resolve.map(line).join(",\n")}\n  ],\n` +
    `  "cost": [\n${vectors.cost.map(line).join(",\n")}\n  ]\n}\n`,
);
