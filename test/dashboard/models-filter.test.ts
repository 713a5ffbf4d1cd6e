import { timestampMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { filtersFromQuery, modelsFilter } from "../../web/src/filters.js";

const dayMs = 86_400_000;
const sinceOf = (query: string) => {
  const { since } = modelsFilter(filtersFromQuery(new URLSearchParams(query)));
  return since ? timestampMs(since) : undefined;
};

// The Traces page's model box reads whole UTC days, which the store sums from its daily roll-ups (D71).
describe("the model box's filter", () => {
  it("starts at the start of the UTC day a rolling range starts in", () => {
    const before = Date.now();
    const since = sinceOf("range=24h");
    const after = Date.now();
    expect(since! % dayMs).toBe(0);
    expect([Math.floor((before - dayMs) / dayMs) * dayMs, Math.floor((after - dayMs) / dayMs) * dayMs]).toContain(since);
  });

  it("starts a custom range's models at its first day, and all time's nowhere", () => {
    expect(sinceOf("range=custom&from=2026-11-25T15:41")).toBe(Date.parse("2026-11-25T00:00:00Z"));
    expect(sinceOf("range=all")).toBeUndefined();
  });
});
