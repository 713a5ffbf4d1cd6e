import { describe, expect, it } from "vitest";
import table from "../../pricing/models.json" with { type: "json" };
import vectors from "../../pricing/vectors.json" with { type: "json" };
import { type Price, PriceTable } from "../src/price-table.js";
import type { Provider } from "../src/trace.js";

const prices = new PriceTable();

interface CostVector {
  provider: Provider;
  model: string;
  tokens_in: number;
  tokens_out: number;
  tokens_cached_in?: number;
  tokens_cache_write?: number;
  tokens_cache_write_1h?: number;
  tokens_audio_in?: number;
  tokens_audio_out?: number;
  web_search_requests?: number;
  service_tier?: string;
  expect_cost_usd: number;
}

describe("the shared price table (sdk/pricing)", () => {
  it("has schema 3 and, for every model, all four rates, a source URL and a date", () => {
    expect(table.schema).toBe(3);
    for (const models of Object.values(table.models)) {
      for (const entry of Object.values(models) as (Price & { source: string; as_of: string })[]) {
        const tiered = [entry, ...Object.values(entry.service_tiers ?? {})];
        for (const rates of tiered.flatMap((t) => [t, ...(t.tiers ?? [])])) {
          for (const rate of [rates.input, rates.output, rates.cached_input, rates.cache_write]) {
            expect(rate).toBeGreaterThanOrEqual(0);
          }
        }
        expect(entry.source).toMatch(/^https:\/\//);
        expect(entry.as_of).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      }
    }
  });

  it.each(vectors.resolve)("resolves $provider/$model to $expect", ({ provider, model, expect: base }) => {
    expect(prices.resolve(provider as Provider, model)).toBe(base);
  });

  it.each(vectors.cost as CostVector[])(
    "prices $provider/$model for $tokens_in in, $tokens_out out at exactly $expect_cost_usd",
    (v: CostVector) => {
      const usage = {
        tokensIn: v.tokens_in,
        tokensOut: v.tokens_out,
        tokensCachedIn: v.tokens_cached_in,
        tokensCacheWrite: v.tokens_cache_write,
        tokensCacheWrite1h: v.tokens_cache_write_1h,
        tokensAudioIn: v.tokens_audio_in,
        tokensAudioOut: v.tokens_audio_out,
        webSearchRequests: v.web_search_requests,
        serviceTier: v.service_tier,
      };
      expect(prices.cost(v.provider, v.model, usage) ?? 0).toBe(v.expect_cost_usd);
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

  it("prices cached input, cache writes and long-context tiers by the total input", () => {
    const custom = new PriceTable({
      anthropic: {
        m: {
          input: 3,
          output: 15,
          cached_input: 0.3,
          cache_write: 3.75,
          tiers: [{ above_input_tokens: 200_000, input: 6, output: 22.5, cached_input: 0.6, cache_write: 7.5 }],
        },
      },
    });
    // 1M in (600k read, 300k written) is above the tier: 100k*6 + 600k*0.6 + 300k*7.5, plus 0 out.
    expect(
      custom.cost("anthropic", "m", {
        tokensIn: 1_000_000,
        tokensOut: 0,
        tokensCachedIn: 600_000,
        tokensCacheWrite: 300_000,
      }),
    ).toBe(3.21);
    // 200k is not above 200k: the base rates.
    expect(custom.cost("anthropic", "m", { tokensIn: 200_000, tokensOut: 1_000_000, tokensCachedIn: 200_000 })).toBe(
      15.06,
    );
  });
});

describe("price overrides", () => {
  it("add models, which then resolve like table entries", () => {
    const custom = new PriceTable({ openai: { "ft:my-model": { input: 1, output: 2 } } });
    expect(custom.cost("openai", "ft:my-model", { tokensIn: 1_000_000, tokensOut: 1_000_000 })).toBe(3);
    expect(custom.cost("openai", "FT:My-Model-2025-01-01", { tokensIn: 1_000_000, tokensOut: 0 })).toBe(1);
  });

  it("replace table prices", () => {
    const custom = new PriceTable({ anthropic: { "claude-sonnet-4": { input: 1, output: 1 } } });
    expect(custom.cost("anthropic", "claude-sonnet-4-20250514", { tokensIn: 500_000, tokensOut: 500_000 })).toBe(1);
    expect(custom.cost("anthropic", "claude-opus-4", { tokensIn: 1_000_000, tokensOut: 0 })).toBe(15);
  });

  it("stay with the table they were given", () => {
    new PriceTable({ openai: { "gpt-4o": { input: 0, output: 0 } } });
    expect(prices.cost("openai", "gpt-4o", { tokensIn: 1_000_000, tokensOut: 0 })).toBe(2.5);
  });

  it("charge cached input and cache writes at the input rate unless told otherwise", () => {
    const custom = new PriceTable({ openai: { "ft:my-model": { input: 1, output: 2 } } });
    expect(
      custom.cost("openai", "ft:my-model", {
        tokensIn: 1_000_000,
        tokensOut: 0,
        tokensCachedIn: 500_000,
        tokensCacheWrite: 500_000,
      }),
    ).toBe(1);
  });

  it.each([
    { input: -1, output: 1 },
    { input: 1, output: Number.NaN },
    { input: 1 },
    { input: 1, output: 1, cached_input: -0.1 },
    { input: 1, output: 1, tiers: [{ above_input_tokens: 0, input: 1, output: 1 }] },
    null,
  ])("are checked: %j is refused", (price) => {
    expect(() => new PriceTable({ gemini: { x: price as never } })).toThrow(TypeError);
  });

  it("return null for unknown models rather than a guess", () => {
    expect(prices.cost("gemini", "gemini-9-ultra", { tokensIn: 10, tokensOut: 10 })).toBeNull();
  });

  it("price a call that used nothing (a failed call) at 0, known model or not", () => {
    expect(prices.cost("gemini", "gemini-9-ultra", { tokensIn: 0, tokensOut: 0 })).toBe(0);
    expect(prices.cost("openai", "gpt-4o", { tokensIn: 0, tokensOut: 0, serviceTier: "flex" })).toBe(0);
  });
});

describe("billing modes", () => {
  const custom = new PriceTable({
    anthropic: {
      m: {
        input: 3,
        output: 15,
        cached_input: 0.3,
        cache_write: 3.75,
        cache_write_1h: 6,
        input_audio: 10,
        output_audio: 20,
        web_search_per_1k: 10,
        service_tiers: { batch: { input: 1.5, output: 7.5 } },
      },
      plain: { input: 3, output: 15 },
    },
  });

  it("price each part of the usage at its own rate", () => {
    // 1M in: 100k cached, 300k written (200k of them for an hour), 200k audio; 1M out, 400k audio; 2 searches.
    const usage = {
      tokensIn: 1_000_000,
      tokensOut: 1_000_000,
      tokensCachedIn: 100_000,
      tokensCacheWrite: 300_000,
      tokensCacheWrite1h: 200_000,
      tokensAudioIn: 200_000,
      tokensAudioOut: 400_000,
      webSearchRequests: 2,
    };
    const expected =
      (400_000 * 3 + 100_000 * 0.3 + 100_000 * 3.75 + 200_000 * 6 + 200_000 * 10 + 600_000 * 15 + 400_000 * 20) / 1e6 +
      (2 * 10) / 1000;
    expect(custom.cost("anthropic", "m", usage)).toBe(expected);
  });

  it("price a service tier at its rates, and standard (or none) at the base rates", () => {
    expect(custom.cost("anthropic", "m", { tokensIn: 1_000_000, tokensOut: 1_000_000, serviceTier: "batch" })).toBe(9);
    expect(custom.cost("anthropic", "m", { tokensIn: 1_000_000, tokensOut: 1_000_000, serviceTier: "standard" })).toBe(
      18,
    );
  });

  it("leave a call unpriced when the price lacks a rate it needs, never charge it another rate", () => {
    const call = { tokensIn: 1000, tokensOut: 1000 };
    expect(custom.cost("anthropic", "m", { ...call, serviceTier: "priority" })).toBeNull();
    expect(custom.cost("anthropic", "plain", { ...call, tokensCacheWrite: 10, tokensCacheWrite1h: 10 })).toBeNull();
    expect(custom.cost("anthropic", "plain", { ...call, tokensAudioIn: 10 })).toBeNull();
    expect(custom.cost("anthropic", "plain", { ...call, tokensAudioOut: 10 })).toBeNull();
    expect(custom.cost("anthropic", "plain", { ...call, webSearchRequests: 1 })).toBeNull();
    // Zero of a missing rate is no need for it.
    expect(custom.cost("anthropic", "plain", { ...call, tokensAudioIn: 0, webSearchRequests: 0 })).toBe(0.018);
  });
});
