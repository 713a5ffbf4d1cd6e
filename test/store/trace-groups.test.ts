import { describe, expect, it } from "vitest";
import { attributeGroups, cappedGroups } from "../../src/store/trace-groups.js";
import { otherValue } from "../../src/store/value-cap.js";

describe("a trace's capped attribute groups", () => {
  const groups = attributeGroups({
    serviceName: null,
    userId: "u1",
    sessionId: "s1",
    environment: "prod",
    tags: ["a", "b", "a", otherValue, "c"],
    metadata: [
      ["team", "x"],
      ["feature", "y"],
    ],
  });

  it("keeps every group once when every value is tracked", () => {
    expect(cappedGroups(groups, (_d, value) => value)).toEqual([
      ["user", "u1"],
      ["session", "s1"],
      ["environment", "prod"],
      ["service", ""],
      ["tag", "a"],
      ["tag", "b"],
      ["tag", otherValue],
      ["tag", "c"],
      ["metadataKey", "team"],
      ["m:team", "x"],
      ["metadataKey", "feature"],
      ["m:feature", "y"],
    ]);
  });

  it("counts the untracked values of a dimension once under other, with a client's own copy of it, in first-seen order", () => {
    const tracked = new Set(["u1", "a", "team", "x"]);
    const kept = (_d: string, value: string) => (value === "" || tracked.has(value) ? value : otherValue);
    expect(cappedGroups(groups, kept)).toEqual([
      ["user", "u1"],
      ["session", otherValue],
      ["environment", otherValue],
      ["service", ""],
      ["tag", "a"],
      ["tag", otherValue],
      ["metadataKey", "team"],
      ["m:team", "x"],
      // An untracked key keeps none of its values.
      ["metadataKey", otherValue],
    ]);
  });
});
