import { describe, expect, it } from "vitest";
import table from "../../pricing/models.json" with { type: "json" };
import vectors from "../../pricing/vectors.json" with { type: "json" };
import { PriceTable } from "../src/price-table.js";
import type { Provider } from "../src/trace.js";

const prices = new PriceTable();

describe("the shared price table (sdk/pricing)", () => {
  it("has schema 1 and, for every model, prices, a source URL and a date", () => {
    expect(table.schema).toBe(1);
    for (const models of Object.values(table.models)) {
      for (const entry of Object.values(models)) {
        expect(entry.input).toBeGreaterThanOrEqual(0);
        expect(entry.output).toBeGreaterThanOrEqual(0);
        expect(entry.source).toMatch(/^https:\/\//);
        expect(entry.as_of).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      }
    }
  });

  it.each(vectors.resolve)("resolves $provider/$model to $expect", ({ provider, model, expect: base }) => {
    expect(prices.resolve(provider as Provider, model)).toBe(base);
  });

  it.each(vectors.cost)(
    "prices $provider/$model for $tokens_in in, $tokens_out out at exactly $expect_cost_usd",
    ({ provider, model, tokens_in, tokens_out, expect_cost_usd }) => {
      expect(prices.cost(provider as Provider, model, tokens_in, tokens_out) ?? 0).toBe(expect_cost_usd);
    },
  );

  it("has cost vectors for every model in the table", () => {
    const covered = new Set(vectors.cost.map((v) => `${v.provider}/${v.model}`));
    for (const [provider, models] of Object.entries(table.models)) {
      for (const model of Object.keys(models)) expect(covered).toContain(`${provider}/${model}`);
    }
  });

  it("refuses a table whose schema it does not know", () => {
    expect(() => new PriceTable({}, { schema: 2, models: {} })).toThrow(/schema 2/);
  });
});

describe("price overrides", () => {
  it("add models, which then resolve like table entries", () => {
    const custom = new PriceTable({ openai: { "ft:my-model": { input: 1, output: 2 } } });
    expect(custom.cost("openai", "ft:my-model", 1_000_000, 1_000_000)).toBe(3);
    expect(custom.cost("openai", "FT:My-Model-2025-01-01", 1_000_000, 0)).toBe(1);
  });

  it("replace table prices", () => {
    const custom = new PriceTable({ anthropic: { "claude-sonnet-4": { input: 1, output: 1 } } });
    expect(custom.cost("anthropic", "claude-sonnet-4-20250514", 500_000, 500_000)).toBe(1);
    expect(custom.cost("anthropic", "claude-opus-4", 1_000_000, 0)).toBe(15);
  });

  it("stay with the table they were given", () => {
    new PriceTable({ openai: { "gpt-4o": { input: 0, output: 0 } } });
    expect(prices.cost("openai", "gpt-4o", 1_000_000, 0)).toBe(2.5);
  });

  it.each([{ input: -1, output: 1 }, { input: 1, output: Number.NaN }, { input: 1 }, null])(
    "are checked: %j is refused",
    (price) => {
      expect(() => new PriceTable({ gemini: { x: price as never } })).toThrow(TypeError);
    },
  );

  it("return null for unknown models rather than a guess", () => {
    expect(prices.cost("gemini", "gemini-9-ultra", 10, 10)).toBeNull();
  });
});
