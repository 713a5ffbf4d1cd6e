import { create } from "@bufbuild/protobuf";
import { timestampFromDate, timestampMs } from "@bufbuild/protobuf/wkt";
import { type AlertRule, AlertRuleSchema, AlertKind, AlertScopeKind, AlertWindowKind } from "../../gen/calltrace/v1/alert_pb.js";
import { openAlertSecretBox } from "../alerts/alert-secret-box.js";
import { DestinationError, destinations } from "../alerts/destinations.js";
import { RuleError, validRule } from "../alerts/rule-validation.js";
import { parseCommandArgs, resolveConfig } from "../config/config.js";
import { loadPlans } from "../config/plans.js";
import { newId } from "../store/ids.js";
import { openStore } from "../store/open-store.js";
import type { Store } from "../store/store.js";
import type { ProjectRecord } from "../store/team-store.js";
import { keyProject } from "./keys-command.js";
import { UsageError } from "./usage-error.js";

const kinds: Record<string, AlertKind> = {
  spend: AlertKind.SPEND,
  errors: AlertKind.ERRORS,
  latency: AlertKind.LATENCY,
  unpriced: AlertKind.UNPRICED,
  quota: AlertKind.QUOTA,
};
const windows: Record<string, AlertWindowKind> = { day: AlertWindowKind.DAY, week: AlertWindowKind.WEEK, month: AlertWindowKind.MONTH };
const scopeFlags = { key: AlertScopeKind.KEY, user: AlertScopeKind.USER, tag: AlertScopeKind.TAG, model: AlertScopeKind.MODEL, environment: AlertScopeKind.ENVIRONMENT } as const;

const options = {
  project: { type: "string" },
  plan: { type: "string" },
  kind: { type: "string" },
  name: { type: "string" },
  "budget-usd": { type: "string" },
  window: { type: "string" },
  "window-minutes": { type: "string" },
  "error-rate": { type: "string" },
  "min-calls": { type: "string" },
  "p95-ms": { type: "string" },
  thresholds: { type: "string" },
  key: { type: "string" },
  user: { type: "string" },
  tag: { type: "string" },
  model: { type: "string" },
  environment: { type: "string" },
  metadata: { type: "string" },
  webhook: { type: "string" },
  slack: { type: "string" },
  email: { type: "string", multiple: true },
  json: { type: "boolean" },
} as const;

type Values = ReturnType<typeof parseCommandArgs<typeof options>>["values"];

/**
 * `calltrace alerts create|list|delete`, on the store like `keys create`: in the project
 * `--project` names, or else the default project that `keys create --plan` reaches (of `--plan`,
 * or of the plan new sign-ups get). API keys cannot manage alerts; this command and the dashboard can.
 */
export async function alertsCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandArgs(argv, options);
  const config = resolveConfig(values);
  const [action, target] = positionals;
  if (action !== "create" && action !== "list" && action !== "delete") throw new UsageError("alerts needs one of: create, list, delete");
  if (action === "delete" && !target) throw new UsageError("alerts delete needs the rule's id");
  const plans = loadPlans(config.plansFile);
  const store = await openStore(config);
  try {
    const plan = values.plan ?? (plans.has("free") ? "free" : [...plans.keys()][0]);
    const project = await keyProject(store, plans, values.project, plan);
    switch (action) {
      case "create":
        return await createAlert(store, config, project, values);
      case "list":
        return await listAlerts(store, project, values.json === true);
      case "delete":
        if (!(await store.alerts.deleteRule(project.id, target!))) throw new UsageError(`project ${project.id} has no alert rule ${target}`);
        await audit(store, project, "alert.rule.delete", target!);
        console.log(`deleted ${target}`);
    }
  } finally {
    await store.close();
  }
}

function number(flag: string, text: string | undefined): number {
  if (text === undefined) return 0;
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value)) throw new UsageError(`--${flag}: expected a number, got ${JSON.stringify(text)}`);
  return value;
}

/** The rule the flags describe, before validation (validRule fills in defaults and checks it). */
function ruleFromFlags(values: Values, projectId: string): AlertRule {
  const kind = kinds[values.kind ?? ""];
  if (kind === undefined) throw new UsageError(`--kind: one of ${Object.keys(kinds).join(", ")}`);
  const scopes = [...Object.entries(scopeFlags).filter(([flag]) => values[flag as keyof typeof scopeFlags] !== undefined), ...(values.metadata ? [["metadata"]] : [])];
  if (scopes.length > 1) throw new UsageError("give at most one scope: --key, --user, --tag, --model, --environment or --metadata k=v");
  let scope = { kind: AlertScopeKind.PROJECT, value: "", metadataKey: "" };
  if (values.metadata !== undefined) {
    const eq = values.metadata.indexOf("=");
    if (eq <= 0) throw new UsageError("--metadata: expected key=value");
    scope = { kind: AlertScopeKind.METADATA, metadataKey: values.metadata.slice(0, eq), value: values.metadata.slice(eq + 1) };
  } else if (scopes[0]) {
    const flag = scopes[0][0] as keyof typeof scopeFlags;
    scope = { kind: scopeFlags[flag], value: values[flag]!, metadataKey: "" };
  }
  const rolling = /^(\d+)h$/.exec(values.window ?? "");
  const windowKind = rolling ? AlertWindowKind.ROLLING_HOURS : windows[values.window ?? ""];
  if (values.window !== undefined && windowKind === undefined) throw new UsageError("--window: day, week, month, or rolling hours such as 24h");
  const thresholds = values.thresholds === undefined ? [] : values.thresholds.split(",").map((t) => number("thresholds", t));
  return create(AlertRuleSchema, {
    id: newId("alr"),
    projectId,
    name: values.name ?? "",
    kind,
    scope,
    thresholdsPercent: thresholds,
    budgetUsd: number("budget-usd", values["budget-usd"]),
    window: { kind: windowKind ?? AlertWindowKind.UNSPECIFIED, rollingHours: rolling ? Number(rolling[1]) : 0 },
    windowMinutes: number("window-minutes", values["window-minutes"]),
    errorRatePercent: number("error-rate", values["error-rate"]),
    minCalls: number("min-calls", values["min-calls"]),
    p95LatencyMs: number("p95-ms", values["p95-ms"]),
    createdAt: timestampFromDate(new Date()),
  });
}

async function createAlert(store: Store, config: ReturnType<typeof resolveConfig>, project: ProjectRecord, values: Values): Promise<void> {
  const draft = ruleFromFlags(values, project.id);
  // The rule is checked before any destination is made, so a refused rule leaves nothing behind.
  const made: string[] = [];
  const references = {
    hasKey: async (id: string) => (await store.keys.listKeys(project.id)).some((k) => k.id === id),
    hasDestination: async (id: string) => made.includes(id),
  };
  try {
    await validRule(draft, references);
    const box = await openAlertSecretBox(config, store.alerts);
    const dests = destinations(store.alerts, box, { privateUrls: config.alertPrivateUrls });
    let secret = "";
    const wanted = [
      ...(values.webhook ? [{ kind: "webhook" as const, url: values.webhook }] : []),
      ...(values.slack ? [{ kind: "slack" as const, url: values.slack }] : []),
      ...(values.email?.length ? [{ kind: "email" as const, emails: values.email }] : []),
    ];
    for (const input of wanted) {
      const created = await dests.create(project.id, { ...input, name: "" });
      made.push(created.destination.id);
      if (created.secret) secret = created.secret;
    }
    const rule = await validRule({ ...draft, destinationIds: made }, references);
    await store.alerts.createRule(rule);
    await audit(store, project, "alert.rule.create", rule.id);
    if (values.json) console.log(JSON.stringify({ id: rule.id, secret, project: project.id, destination_ids: made }));
    else {
      console.log(rule.id);
      if (secret) console.log(`webhook secret (shown once): ${secret}`);
    }
  } catch (error) {
    if (error instanceof RuleError) throw new UsageError(`${error.message} (${flagOf(error.field)})`);
    if (error instanceof DestinationError) throw new UsageError(error.message);
    throw error;
  }
}

/** The flag that sets a rule field, to say in an error. */
function flagOf(field: string): string {
  const flags: Record<string, string> = {
    "rule.budget_usd": "--budget-usd",
    "rule.window.kind": "--window",
    "rule.window.rolling_hours": "--window Nh",
    "rule.window_minutes": "--window-minutes",
    "rule.error_rate_percent": "--error-rate",
    "rule.min_calls": "--min-calls",
    "rule.p95_latency_ms": "--p95-ms",
    "rule.thresholds_percent": "--thresholds",
    "rule.name": "--name",
  };
  return flags[field.replace(/\[\d+\]$/, "")] ?? "the scope flags";
}

async function listAlerts(store: Store, project: ProjectRecord, json: boolean): Promise<void> {
  const rules = await store.alerts.listRules(project.id);
  const rows = rules.map((r) => ({
    id: r.id,
    name: r.name,
    kind: Object.keys(kinds).find((k) => kinds[k] === r.kind)!,
    scope: scopeText(r),
    thresholds: r.thresholdsPercent,
    muted: r.muted,
    destination_ids: r.destinationIds,
    created: r.createdAt ? new Date(timestampMs(r.createdAt)).toISOString() : null,
  }));
  if (json) {
    console.log(JSON.stringify(rows));
    return;
  }
  const table = [["ID", "KIND", "SCOPE", "THRESHOLDS", "MUTED", "NAME"], ...rows.map((r) => [r.id, r.kind, r.scope, r.thresholds.join(","), r.muted ? "yes" : "no", r.name])];
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  for (const row of table) console.log(row.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd());
}

function scopeText(rule: AlertRule): string {
  const scope = rule.scope;
  if (!scope || scope.kind === AlertScopeKind.PROJECT) return "project";
  if (scope.kind === AlertScopeKind.METADATA) return `metadata ${scope.metadataKey}=${scope.value}`;
  return `${AlertScopeKind[scope.kind]!.toLowerCase()} ${scope.value}`;
}

function audit(store: Store, project: ProjectRecord, action: string, target: string) {
  return store.teams.appendAudit({ organizationId: project.organizationId, projectId: project.id, actor: "cli", action, target, details: {} });
}
