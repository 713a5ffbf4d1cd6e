import { describe, expect, it } from "vitest";
import { type Budget, exceededBudget, parseBudgetStatus } from "../src/budget-status.js";

// A BudgetStatus as protobuf JSON writes it: enum names, camelCase, defaults left out.
function status(...budgets: object[]) {
  return { projectId: "p_1", budgets, measuredAt: "2026-11-26T19:00:00Z" };
}
function budget(scope: object, extra: object = {}) {
  return {
    ruleId: "r_1",
    name: "cap",
    scope,
    window: { kind: "ALERT_WINDOW_KIND_DAY" },
    windowStart: "2026-11-26T00:00:00Z",
    windowEnd: "2026-11-27T00:00:00Z",
    budgetUsd: 5,
    spendUsd: 6,
    exceeded: true,
    ...extra,
  };
}
const noon = Date.parse("2026-11-26T12:00:00Z");
const call = (model: string, attributes = {}) => ({ model, attributes });
const parse = (...budgets: object[]): Budget[] => parseBudgetStatus(status(...budgets));

describe("reading GET /v1/budget", () => {
  it("reads every field, the scope kind lower-cased without its prefix", () => {
    expect(parse(budget({ kind: "ALERT_SCOPE_KIND_METADATA", value: "search", metadataKey: "feature" }))).toEqual([
      {
        ruleId: "r_1",
        name: "cap",
        scope: { kind: "metadata", value: "search", metadataKey: "feature" },
        budgetUsd: 5,
        spendUsd: 6,
        exceeded: true,
        windowEndsAt: Date.parse("2026-11-27T00:00:00Z"),
      },
    ]);
  });

  it("takes left-out defaults as the defaults, and Infinity written as a string", () => {
    const [read] = parse({ ruleId: "r_2", scope: { kind: "ALERT_SCOPE_KIND_PROJECT" }, spendUsd: "Infinity" });
    expect(read).toEqual({
      ruleId: "r_2",
      name: "",
      scope: { kind: "project", value: "", metadataKey: "" },
      budgetUsd: 0,
      spendUsd: Number.POSITIVE_INFINITY,
      exceeded: false,
      windowEndsAt: undefined,
    });
    expect(parseBudgetStatus({ projectId: "p_1" })).toEqual([]);
  });

  it("has no end for a rolling window, whose window_end is the time measured", () => {
    const [read] = parse(
      budget(
        { kind: "ALERT_SCOPE_KIND_PROJECT" },
        { window: { kind: "ALERT_WINDOW_KIND_ROLLING_HOURS", rollingHours: 3 } },
      ),
    );
    expect(read?.windowEndsAt).toBeUndefined();
  });

  it.each([
    ["null", null],
    ["a string", "budgets"],
    ["budgets that are no array", { budgets: { ruleId: "r" } }],
    ["a budget without a rule id", { budgets: [{ name: "x" }] }],
  ])("refuses %s", (_what, body) => {
    expect(() => parseBudgetStatus(body)).toThrow(/not a BudgetStatus/);
  });
});

describe("which exceeded budget counts a call", () => {
  const scoped = (kind: string, value = "", metadataKey = "") =>
    parse(budget({ kind: `ALERT_SCOPE_KIND_${kind}`, value, metadataKey }));

  it("the project's and this key's count every call", () => {
    for (const kind of ["PROJECT", "KEY"]) {
      expect(exceededBudget(scoped(kind, kind === "KEY" ? "k_1" : ""), call("gpt-4o"), undefined, noon)?.ruleId).toBe(
        "r_1",
      );
    }
  });

  it.each([
    ["USER", "u_1", "", call("m", { userId: "u_1" }), call("m", { userId: "u_2" })],
    ["TAG", "search", "", call("m", { tags: ["chat", "search"] }), call("m", { tags: ["chat"] })],
    ["TAG", "search", "", call("m", { tags: "search" }), call("m", {})],
    ["MODEL", "gpt-4o", "", call("gpt-4o"), call("gpt-4o-mini")],
    ["ENVIRONMENT", "prod", "", call("m", { environment: "prod" }), call("m", { environment: "staging" })],
    ["METADATA", "acme", "team", call("m", { metadata: { team: "acme" } }), call("m", { metadata: { org: "acme" } })],
  ])("%s %s counts the calls it names, and no others", (kind, value, key, counted, other) => {
    const budgets = scoped(kind, value, key);
    expect(exceededBudget(budgets, counted, undefined, noon)?.ruleId).toBe("r_1");
    expect(exceededBudget(budgets, other, undefined, noon)).toBeUndefined();
  });

  it("counts init()'s attributes under the scope's and the call's, as on the trace", () => {
    const budgets = scoped("ENVIRONMENT", "prod");
    expect(exceededBudget(budgets, call("m"), { environment: "prod" }, noon)).toBeDefined();
    expect(exceededBudget(budgets, call("m", { environment: "dev" }), { environment: "prod" }, noon)).toBeUndefined();
    const tagged = scoped("TAG", "batch");
    expect(exceededBudget(tagged, call("m", { tags: ["chat"] }), { tags: ["batch"] }, noon)).toBeDefined();
  });

  it("never refuses on a budget not exceeded, a calendar window that has ended, or a scope it does not know", () => {
    const project = { kind: "ALERT_SCOPE_KIND_PROJECT" };
    expect(exceededBudget(parse(budget(project, { exceeded: false })), call("m"), undefined, noon)).toBeUndefined();
    const nextDay = Date.parse("2026-11-27T00:00:01Z");
    expect(exceededBudget(parse(budget(project)), call("m"), undefined, nextDay)).toBeUndefined();
    expect(
      exceededBudget(parse(budget({ kind: "ALERT_SCOPE_KIND_TEAM", value: "x" })), call("m"), undefined, noon),
    ).toBeUndefined();
    expect(
      exceededBudget(parse(budget({ kind: "ALERT_SCOPE_KIND_UNSPECIFIED" })), call("m"), undefined, noon),
    ).toBeUndefined();
  });

  it("answers the first exceeded budget that counts the call", () => {
    const budgets = parse(
      budget({ kind: "ALERT_SCOPE_KIND_USER", value: "u_2" }, { ruleId: "other-user" }),
      budget({ kind: "ALERT_SCOPE_KIND_USER", value: "u_1" }, { ruleId: "under", exceeded: false }),
      budget({ kind: "ALERT_SCOPE_KIND_USER", value: "u_1" }, { ruleId: "this-user" }),
    );
    expect(exceededBudget(budgets, call("m", { userId: "u_1" }), undefined, noon)?.ruleId).toBe("this-user");
  });
});
