import { describe, expect, it } from "vitest";
import { retryDelay } from "../src/retry-delay.js";

const policy = { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 60_000 };
const half = () => 0.5;

describe("retryDelay", () => {
  it.each([429, 502, 503, 504])("retries a %i", (status) => {
    expect(retryDelay({ status }, 1, policy, half)).toBeGreaterThan(0);
  });

  it.each([400, 401, 404, 413, 415, 500])("does not retry a %i", (status) => {
    expect(retryDelay({ status }, 1, policy, half)).toBeUndefined();
  });

  it("retries network errors with exponential backoff, jittered between half and all of it", () => {
    expect([1, 2, 3].map((attempt) => retryDelay(undefined, attempt, policy, () => 0))).toEqual([50, 100, 200]);
    expect([1, 2, 3].map((attempt) => retryDelay(undefined, attempt, policy, () => 0.999999))).toEqual([
      expect.closeTo(100, 3),
      expect.closeTo(200, 3),
      expect.closeTo(400, 3),
    ]);
  });

  it("caps backoff at maxDelayMs", () => {
    expect(retryDelay(undefined, 4, { ...policy, maxDelayMs: 300 }, () => 0.999999)).toBeCloseTo(300, 3);
  });

  it("waits exactly retry_after when the service gives one", () => {
    expect(retryDelay({ status: 429, retryAfterSeconds: 7 }, 1, policy, half)).toBe(7_000);
    expect(retryDelay({ status: 503, retryAfterSeconds: 0 }, 1, policy, half)).toBe(0);
  });

  it("gives up when retry_after is beyond maxDelayMs (a spent monthly quota)", () => {
    expect(
      retryDelay({ status: 429, retryAfterSeconds: 86_400, error: "Monthly quota exceeded" }, 1, policy),
    ).toBeUndefined();
  });

  it("gives up after maxAttempts", () => {
    expect(retryDelay(undefined, 4, policy, half)).toBeGreaterThan(0);
    expect(retryDelay(undefined, 5, policy, half)).toBeUndefined();
  });
});
