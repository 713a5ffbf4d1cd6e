import { mergeAttributes, type TraceAttributes } from "./attributes.js";
import { dig } from "./read-json.js";

/**
 * Which calls a budget counts, as GET /v1/budget names it (`AlertScope` of
 * proto/calltrace/v1/alert.proto, in protobuf JSON): `kind` is the enum's
 * name without its prefix, lower case: `project`, `key`, `user`, `tag`,
 * `model`, `environment` or `metadata`.
 */
export interface BudgetScope {
  kind: string;
  /** The key id, user, tag, model, environment or metadata value; "" for the project. */
  value: string;
  /** For `metadata` only. */
  metadataKey: string;
}

/** One spend budget of the project, as measured by the service. */
export interface Budget {
  ruleId: string;
  name: string;
  scope: BudgetScope;
  budgetUsd: number;
  spendUsd: number;
  exceeded: boolean;
  /** `Date.now()` past which a calendar window (day, week, month) is over; `undefined` for a rolling one. */
  windowEndsAt: number | undefined;
}

/** What a call is checked against: the request's model and its merged attributes. */
export interface BudgetedCall {
  model: unknown;
  attributes: TraceAttributes | undefined;
}

const CALENDAR_WINDOWS = new Set(["ALERT_WINDOW_KIND_DAY", "ALERT_WINDOW_KIND_WEEK", "ALERT_WINDOW_KIND_MONTH"]);

/**
 * Reads the body of GET /v1/budget (protobuf JSON of `BudgetStatus`, which
 * leaves out default values: `exceeded: false`, an empty `value`). Throws a
 * TypeError on a body of another shape; a budget whose scope it does not know
 * is kept with that kind and never matches.
 */
export function parseBudgetStatus(body: unknown): Budget[] {
  const budgets = dig(body, "budgets") ?? [];
  if (body === null || typeof body !== "object" || !Array.isArray(budgets)) {
    throw new TypeError("not a BudgetStatus: expected an object with a budgets array");
  }
  return budgets.map((entry, index) => {
    const ruleId = dig(entry, "ruleId") ?? dig(entry, "rule_id");
    if (typeof ruleId !== "string") throw new TypeError(`not a BudgetStatus: budgets[${index}] has no rule id`);
    const scope = dig(entry, "scope");
    const kind = String(dig(scope, "kind") ?? "ALERT_SCOPE_KIND_UNSPECIFIED");
    const windowEnd = dig(entry, "windowEnd") ?? dig(entry, "window_end");
    const calendar = CALENDAR_WINDOWS.has(String(dig(entry, "window", "kind")));
    return {
      ruleId,
      name: text(dig(entry, "name")),
      scope: {
        kind: kind.replace(/^ALERT_SCOPE_KIND_/, "").toLowerCase(),
        value: text(dig(scope, "value")),
        metadataKey: text(dig(scope, "metadataKey") ?? dig(scope, "metadata_key")),
      },
      budgetUsd: usd(dig(entry, "budgetUsd") ?? dig(entry, "budget_usd")),
      spendUsd: usd(dig(entry, "spendUsd") ?? dig(entry, "spend_usd")),
      exceeded: (dig(entry, "exceeded") ?? false) === true,
      windowEndsAt: calendar && typeof windowEnd === "string" ? Date.parse(windowEnd) || undefined : undefined,
    };
  });
}

/**
 * The first exceeded budget that counts `call`, if any. `defaults` are
 * init()'s attributes, under the scope's and the call's, as on the trace.
 * The service lists only the budgets that can count this key's calls, so a
 * key-scoped budget it lists is this key's.
 */
export function exceededBudget(
  budgets: readonly Budget[],
  call: BudgetedCall,
  defaults: TraceAttributes | undefined,
  now: number = Date.now(),
): Budget | undefined {
  let attributes: TraceAttributes | undefined;
  for (const budget of budgets) {
    if (!budget.exceeded || (budget.windowEndsAt !== undefined && now >= budget.windowEndsAt)) continue;
    // Merged only when some budget is exceeded: the common case costs one loop.
    attributes ??= mergeAttributes(defaults, call.attributes);
    if (counts(budget.scope, call.model, attributes)) return budget;
  }
  return undefined;
}

function counts(scope: BudgetScope, model: unknown, attributes: TraceAttributes): boolean {
  switch (scope.kind) {
    case "project":
    case "key":
      return true;
    case "user":
      return attributes.userId === scope.value;
    case "tag":
      // A lone string is one tag, as on the trace.
      return [attributes.tags ?? []].flat().includes(scope.value);
    case "model":
      return model === scope.value;
    case "environment":
      return attributes.environment === scope.value;
    case "metadata":
      return attributes.metadata?.[scope.metadataKey] === scope.value;
    default:
      return false; // a scope this SDK does not know: never refuse on a guess
  }
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

// protobuf JSON writes doubles as numbers, or as strings for "Infinity" and "NaN".
function usd(value: unknown): number {
  const amount = typeof value === "string" ? Number(value) : value;
  return typeof amount === "number" ? amount : 0;
}
