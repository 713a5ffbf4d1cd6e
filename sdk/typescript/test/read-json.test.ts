import { describe, expect, it } from "vitest";
import { dig, readCount, readString, sumCounts } from "../src/read-json.js";

describe("reading provider JSON", () => {
  it("digs through objects and functions, and reads anything else as undefined", () => {
    function Client() {}
    Client.Resource = { prototype: { create: 1 } };
    expect(dig({ a: { b: 2 } }, "a", "b")).toBe(2);
    expect(dig(Client, "Resource", "prototype", "create")).toBe(1);
    expect(dig({ a: "text" }, "a", "b")).toBeUndefined();
    expect(dig(null, "a")).toBeUndefined();
    expect(dig(undefined, "a", "b")).toBeUndefined();
  });

  it("reads counts and strings only when they are what they should be", () => {
    expect([readCount(3), readCount("3"), readCount(Number.NaN), readCount(null)]).toEqual([
      3,
      undefined,
      undefined,
      undefined,
    ]);
    expect([readString("gpt-4o"), readString(""), readString(4)]).toEqual(["gpt-4o", undefined, undefined]);
  });

  it("sums the counts that are there", () => {
    expect(sumCounts(1, undefined, 2)).toBe(3);
    expect(sumCounts(undefined, null)).toBeUndefined();
    expect(sumCounts(0)).toBe(0);
  });
});
