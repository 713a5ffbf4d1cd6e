import { describe, expect, it } from "vitest";
import { capScope, otherValue, valueCap } from "../../src/store/value-cap.js";

describe("value cap", () => {
  const today = capScope("acc_1", "user", 20_000);

  it("tracks the first values of a scope and counts the rest as other", () => {
    const cap = valueCap(2);
    expect(cap.has(today)).toBe(false);
    cap.seed(today, []);
    expect(["a", "b", "c", "a", "d", "b"].map((v) => cap.admit(today, v))).toEqual(["a", "b", otherValue, "a", otherValue, "b"]);
  });

  it("always tracks the empty value, and never lets a client's copy of the other value take a slot", () => {
    const cap = valueCap(1);
    cap.seed(today, []);
    expect(cap.admit(today, otherValue)).toBe(otherValue);
    expect(cap.admit(today, "")).toBe("");
    expect(cap.admit(today, "a")).toBe("a");
    expect(cap.admit(today, "")).toBe("");
    expect(cap.admit(today, "b")).toBe(otherValue);
  });

  it("counts the store's values toward the bound, and keeps each scope apart", () => {
    const cap = valueCap(2);
    cap.seed(today, ["x", "", otherValue]);
    expect(cap.admit(today, "x")).toBe("x");
    expect(cap.admit(today, "y")).toBe("y");
    expect(cap.admit(today, "z")).toBe(otherValue);
    const tomorrow = capScope("acc_1", "user", 20_001);
    expect(() => cap.admit(tomorrow, "z")).toThrow(/not seeded/);
    cap.seed(tomorrow, []);
    expect(cap.admit(tomorrow, "z")).toBe("z");
    const otherProject = capScope("acc_2", "user", 20_000);
    cap.seed(otherProject, []);
    expect(cap.admit(otherProject, "z")).toBe("z");
  });

  it("drops the least recently used scopes past its memory bound, so they are seeded again", () => {
    const cap = valueCap(5);
    cap.seed(today, []);
    for (let day = 0; day < 5000; day++) {
      cap.admit(today, "kept");
      cap.seed(capScope("acc_1", "session", day), []);
    }
    expect(cap.has(today)).toBe(true);
    expect(cap.has(capScope("acc_1", "session", 0))).toBe(false);
    expect(cap.has(capScope("acc_1", "session", 4999))).toBe(true);
  });

  it("tracks every value with a limit of 0", () => {
    const cap = valueCap(0);
    expect(cap.has(today)).toBe(true);
    for (let i = 0; i < 100; i++) expect(cap.admit(today, `v${i}`)).toBe(`v${i}`);
  });
});
