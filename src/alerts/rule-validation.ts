import { create } from "@bufbuild/protobuf";
import { type AlertRule, AlertRuleSchema, AlertKind, AlertScopeKind, AlertWindowKind } from "../../gen/calltrace/v1/alert_pb.js";

/** A rule refused: `field` is the offending field's name in the contract, e.g. `rule.budget_usd`. */
export class RuleError extends Error {
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {
    super(`${field}: ${reason}`);
  }
}

/** What a rule may refer to in its project, looked up by the caller (AlertService, the CLI). */
export interface RuleReferences {
  /** Whether the project has a key with this id. */
  hasKey(id: string): Promise<boolean>;
  /** Whether the project has a destination with this id. */
  hasDestination(id: string): Promise<boolean>;
}

const defaultThresholds: Partial<Record<AlertKind, number[]>> = {
  [AlertKind.SPEND]: [50, 80, 100],
  [AlertKind.QUOTA]: [80, 100],
  [AlertKind.ERRORS]: [100],
  [AlertKind.LATENCY]: [100],
};

const kindNames: Record<number, string> = {
  [AlertKind.SPEND]: "spend",
  [AlertKind.ERRORS]: "errors",
  [AlertKind.LATENCY]: "latency",
  [AlertKind.UNPRICED]: "unpriced",
  [AlertKind.QUOTA]: "quota",
};

const between = (field: string, value: number, low: number, high: number, exclusiveLow = false) => {
  if (!Number.isFinite(value) || (exclusiveLow ? value <= low : value < low) || value > high) {
    throw new RuleError(field, `must be ${exclusiveLow ? "more than" : "at least"} ${low} and at most ${high}`);
  }
};

/**
 * Checks a rule as a user gave it and answers it in stored form: defaults filled in (name,
 * scope, thresholds), the fields its kind does not use cleared. Throws RuleError naming the first
 * field at fault.
 */
export async function validRule(input: AlertRule, refs: RuleReferences): Promise<AlertRule> {
  const kind = input.kind;
  if (!kindNames[kind]) throw new RuleError("rule.kind", "must be one of spend, errors, latency, unpriced, quota");
  const rule = create(AlertRuleSchema, {
    id: input.id,
    projectId: input.projectId,
    kind,
    muted: input.muted,
    createdAt: input.createdAt,
    name: input.name.trim() || `${kindNames[kind]} alert`,
  });
  if (rule.name.length > 200) throw new RuleError("rule.name", "must be at most 200 characters");

  const scope = input.scope;
  const scopeKind = scope?.kind || AlertScopeKind.PROJECT;
  if (!AlertScopeKind[scopeKind]) throw new RuleError("rule.scope.kind", "is not a scope kind");
  const value = scope?.value.trim() ?? "";
  if (scopeKind === AlertScopeKind.PROJECT) {
    if (value) throw new RuleError("rule.scope.value", "must be empty for the whole project");
  } else {
    if (!value || value.length > 256) throw new RuleError("rule.scope.value", "must be 1 to 256 characters");
    if (scopeKind === AlertScopeKind.KEY && !(await refs.hasKey(value)))
      throw new RuleError("rule.scope.value", `the project has no key ${JSON.stringify(value)}`);
  }
  const metadataKey = scopeKind === AlertScopeKind.METADATA ? (scope?.metadataKey.trim() ?? "") : "";
  if (scopeKind === AlertScopeKind.METADATA && (!metadataKey || metadataKey.length > 256)) {
    throw new RuleError("rule.scope.metadata_key", "must be 1 to 256 characters for a metadata scope");
  }
  if (kind === AlertKind.QUOTA && scopeKind !== AlertScopeKind.PROJECT && scopeKind !== AlertScopeKind.KEY) {
    throw new RuleError("rule.scope.kind", "a quota rule watches one key, or every key of the project");
  }
  rule.scope = { $typeName: "calltrace.v1.AlertScope", kind: scopeKind, value, metadataKey };

  const thresholds = input.thresholdsPercent.length > 0 ? input.thresholdsPercent : (defaultThresholds[kind] ?? []);
  if (kind !== AlertKind.UNPRICED) {
    if (thresholds.length > 10) throw new RuleError("rule.thresholds_percent", "at most 10 thresholds");
    thresholds.forEach((t, i) => {
      between(`rule.thresholds_percent[${i}]`, t, 0, 1000, true);
      if (i > 0 && t <= thresholds[i - 1]!) throw new RuleError("rule.thresholds_percent", "must be ascending, each once");
    });
    rule.thresholdsPercent = [...thresholds];
  }

  switch (kind) {
    case AlertKind.SPEND: {
      between("rule.budget_usd", input.budgetUsd, 0, 1e9, true);
      rule.budgetUsd = input.budgetUsd;
      const windowKind = input.window?.kind ?? AlertWindowKind.UNSPECIFIED;
      if (!AlertWindowKind[windowKind] || windowKind === AlertWindowKind.UNSPECIFIED) {
        throw new RuleError("rule.window.kind", "must be day, week, month or rolling hours");
      }
      const rollingHours = input.window?.rollingHours ?? 0;
      if (windowKind === AlertWindowKind.ROLLING_HOURS) between("rule.window.rolling_hours", rollingHours, 1, 744);
      rule.window = {
        $typeName: "calltrace.v1.AlertWindow",
        kind: windowKind,
        rollingHours: windowKind === AlertWindowKind.ROLLING_HOURS ? rollingHours : 0,
      };
      break;
    }
    case AlertKind.ERRORS:
      between("rule.window_minutes", input.windowMinutes, 1, 1440);
      between("rule.error_rate_percent", input.errorRatePercent, 0, 100, true);
      between("rule.min_calls", input.minCalls, 0, 1e9);
      Object.assign(rule, { windowMinutes: input.windowMinutes, errorRatePercent: input.errorRatePercent, minCalls: input.minCalls });
      break;
    case AlertKind.LATENCY:
      between("rule.window_minutes", input.windowMinutes, 1, 1440);
      between("rule.p95_latency_ms", input.p95LatencyMs, 0, 86_400_000, true);
      Object.assign(rule, { windowMinutes: input.windowMinutes, p95LatencyMs: input.p95LatencyMs });
      break;
  }

  const destinationIds = [...new Set(input.destinationIds)];
  if (destinationIds.length > 20) throw new RuleError("rule.destination_ids", "at most 20 destinations");
  for (const id of destinationIds) {
    if (!(await refs.hasDestination(id)))
      throw new RuleError("rule.destination_ids", `the project has no destination ${JSON.stringify(id)}`);
  }
  rule.destinationIds = destinationIds;
  return rule;
}
