import { describe, expect, it } from "vitest";
import { PriceCheck } from "../../gen/calltrace/v1/trace_pb.js";
import vectors from "../../sdk/pricing/vectors.json" with { type: "json" };
import { isPriced, priceCheck, serverCost } from "../../src/pricing/server-prices.js";

/** A cost vector; the cache counts and billing modes are in some vectors only. */
type CostVector = (typeof vectors.cost)[number] & {
  tokens_cached_in?: number;
  tokens_cache_write?: number;
  tokens_cache_write_1h?: number;
  tokens_audio_in?: number;
  tokens_audio_out?: number;
  web_search_requests?: number;
  service_tier?: string;
};

describe("serverCost prices a call as every SDK does (sdk/pricing/vectors.json)", () => {
  it.each(vectors.cost as CostVector[])("$provider/$model: $tokens_in in, $tokens_out out", (v) => {
    const cost = serverCost({
      provider: v.provider,
      model: v.model,
      tokensIn: v.tokens_in,
      tokensOut: v.tokens_out,
      tokensCachedIn: v.tokens_cached_in,
      tokensCacheWrite: v.tokens_cache_write,
      tokensCacheWrite1h: v.tokens_cache_write_1h,
      tokensAudioIn: v.tokens_audio_in,
      tokensAudioOut: v.tokens_audio_out,
      webSearchRequests: v.web_search_requests,
      serviceTier: v.service_tier,
    });
    // The SDKs send 0 for a model they cannot price; the server says it does not know.
    if (v.expect_cost_usd === 0 && cost === undefined) return;
    expect(cost).toBe(v.expect_cost_usd);
  });

  it.each(vectors.resolve)("knows $provider/$model exactly when it resolves ($expect)", ({ provider, model, expect: key }) => {
    expect(isPriced(provider, model)).toBe(key !== null);
    expect(serverCost({ provider, model, tokensIn: 1, tokensOut: 1 }) === undefined).toBe(key === null);
  });

  it("does not price a provider outside the contract", () => {
    expect(serverCost({ provider: "mistral", model: "gpt-4o", tokensIn: 10, tokensOut: 10 })).toBeUndefined();
  });
});

describe("priceCheck compares the client's cost with the server's price", () => {
  it("matches within 1 % of the server's price, either way", () => {
    expect(priceCheck(1.0, 1.0)).toBe(PriceCheck.MATCH);
    expect(priceCheck(1.0099, 1.0)).toBe(PriceCheck.MATCH);
    expect(priceCheck(0.9901, 1.0)).toBe(PriceCheck.MATCH);
    expect(priceCheck(0, 0)).toBe(PriceCheck.MATCH);
  });

  it("flags a disagreement over 1 %, and a model the table does not know", () => {
    expect(priceCheck(1.02, 1.0)).toBe(PriceCheck.MISMATCH);
    expect(priceCheck(0.98, 1.0)).toBe(PriceCheck.MISMATCH);
    expect(priceCheck(0, 0.5)).toBe(PriceCheck.MISMATCH);
    expect(priceCheck(0.001, 0)).toBe(PriceCheck.MISMATCH);
    expect(priceCheck(0.5, undefined)).toBe(PriceCheck.UNPRICED);
  });

  it("catches the over-billing of a mostly cached Claude call priced as plain input", () => {
    const usage = { provider: "anthropic", model: "claude-sonnet-4-5-20250929", tokensIn: 100_000, tokensOut: 500, tokensCachedIn: 90_000 };
    const plain = serverCost({ ...usage, tokensCachedIn: 0 })!;
    const cached = serverCost(usage)!;
    expect(plain / cached).toBeGreaterThan(2);
    expect(priceCheck(plain, cached)).toBe(PriceCheck.MISMATCH);
  });
});
