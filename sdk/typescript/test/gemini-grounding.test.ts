import { describe, expect, it } from "vitest";
import vectors from "../../pricing/grounding-vectors.json" with { type: "json" };
import { groundingSearches, groundingTally } from "../src/gemini-grounding.js";

describe("Gemini grounding searches (sdk/pricing/README.md)", () => {
  it.each(vectors)(
    "$model with $candidates.length candidate(s) bills $expect",
    ({ model, candidates, expect: searches }) => {
      expect(groundingSearches(model, { candidates }) ?? null).toBe(searches);
    },
  );

  it("counts a stream's grounding once: the most any chunk gave", () => {
    const tally = groundingTally();
    const queries = (n: number) => ({ candidates: [{ groundingMetadata: { webSearchQueries: Array(n).fill("q") } }] });
    expect(tally("gemini-3-pro-preview", { candidates: [{ content: {} }] })).toBeUndefined();
    expect(tally("gemini-3-pro-preview", queries(2))).toBe(2);
    expect(tally("gemini-3-pro-preview", { candidates: [{ content: {} }] })).toBe(2);
    expect(tally("gemini-3-pro-preview", queries(2))).toBe(2);
  });
});
