import { describe, expect, it } from "vitest";
import { errorGroupOf, normaliseError } from "../../src/store/error-group.js";

describe("normaliseError", () => {
  it.each([
    ["numbers", "Rate limit reached: 30000 tokens per min, used 29876.5", "Rate limit reached: <num> tokens per min, used <num>"],
    ["uuids", "request 0b7c4a1e-5f3d-4c2b-9a8e-1d2c3b4a5f6e failed", "request <uuid> failed"],
    ["hex", "trace 4bf92f3577b34da6a3ce929d0e0e4736 at 0xdeadbeef", "trace <hex> at <hex>"],
    ["e-mails", "user alice.smith+x@example.co.uk is over quota", "user <email> is over quota"],
    ["double quotes", 'model "gpt-5-turbo" does not exist', "model <str> does not exist"],
    ["single quotes", "Invalid value for 'temperature': 7", "Invalid value for <str>: <num>"],
    ["backticks", "unknown field `toolz`", "unknown field <str>"],
    ["mixed-case ids", "Request id req_011CSHoEeqs5C3EKmXkkqnPR was throttled", "Request id <id> was throttled"],
    ["long ids", "completion chatcmpl_abcdefghij0123456789 timed out", "completion <id> timed out"],
    ["apostrophes stay", "model's context window exceeded", "model's context window exceeded"],
    ["plain words stay", "Internal server error", "Internal server error"],
    ["whitespace", "  overloaded \n\t try again  ", "overloaded try again"],
    ["empty", "", "(no message)"],
    ["null", null, "(no message)"],
  ])("masks %s", (_, input, masked) => {
    expect(normaliseError(input)).toBe(masked);
  });

  it("cuts a long message to 300 characters", () => {
    const masked = normaliseError("x ".repeat(400));
    expect(masked).toHaveLength(300);
    expect(masked.endsWith("…")).toBe(true);
  });

  it("gives two occurrences of one failure the same group, and another failure another", () => {
    const a = errorGroupOf("429: rate limit for key sk-AbCdEf123456 at 12:01");
    const b = errorGroupOf("429: rate limit for key sk-ZyXwVu987654 at 13:45");
    const c = errorGroupOf("500: internal error");
    expect(a).toEqual(b);
    expect(a.id).toMatch(/^[0-9a-f]{16}$/);
    expect(c.id).not.toBe(a.id);
  });
});
