import { create } from "@bufbuild/protobuf";
import { useState } from "preact/hooks";
import { type AlertRule, AlertKind, AlertRuleSchema, AlertScopeKind, AlertWindowKind } from "../../../gen/calltrace/v1/alert_pb.js";
import type { AlertDestination } from "../../../gen/calltrace/v1/alert_service_pb.js";
import { messageOf } from "../api.js";
import { ErrorNote } from "./outcome.js";

export const kindNames: readonly [AlertKind, string][] = [
  [AlertKind.SPEND, "Spend over a budget"],
  [AlertKind.ERRORS, "Error rate"],
  [AlertKind.LATENCY, "p95 latency"],
  [AlertKind.UNPRICED, "Unpriced calls"],
  [AlertKind.QUOTA, "Monthly quota"],
];

const scopeNames: readonly [AlertScopeKind, string][] = [
  [AlertScopeKind.PROJECT, "The whole project"],
  [AlertScopeKind.KEY, "One API key (its id)"],
  [AlertScopeKind.USER, "One user"],
  [AlertScopeKind.TAG, "One tag"],
  [AlertScopeKind.MODEL, "One model"],
  [AlertScopeKind.ENVIRONMENT, "One environment"],
  [AlertScopeKind.METADATA, "One metadata value"],
];

const windowNames: readonly [AlertWindowKind, string][] = [
  [AlertWindowKind.DAY, "Calendar day"],
  [AlertWindowKind.WEEK, "Calendar week"],
  [AlertWindowKind.MONTH, "Calendar month"],
  [AlertWindowKind.ROLLING_HOURS, "Rolling hours"],
];

const defaultThresholds: Partial<Record<AlertKind, string>> = {
  [AlertKind.SPEND]: "50, 80, 100",
  [AlertKind.QUOTA]: "80, 100",
  [AlertKind.ERRORS]: "100",
  [AlertKind.LATENCY]: "100",
};

/** A number typed in a field; NaN (refused by the server, naming the field) when it is not one. */
const numberOf = (text: string) => (text.trim() === "" ? 0 : Number(text));

/**
 * Creates or edits a rule: its kind's own settings, its scope, thresholds and destinations. The
 * server checks everything and names the field at fault; the form only shows what applies.
 */
export function AlertRuleForm(props: {
  rule: AlertRule | undefined;
  destinations: AlertDestination[];
  onSave: (rule: AlertRule) => Promise<void>;
  onCancel: () => void;
}) {
  const r = props.rule;
  const [name, setName] = useState(r?.name ?? "");
  const [kind, setKind] = useState<AlertKind>(r?.kind ?? AlertKind.SPEND);
  const [budget, setBudget] = useState(r?.budgetUsd ? String(r.budgetUsd) : "");
  const [windowKind, setWindowKind] = useState<AlertWindowKind>(r?.window?.kind || AlertWindowKind.DAY);
  const [rollingHours, setRollingHours] = useState(String(r?.window?.rollingHours || 24));
  const [windowMinutes, setWindowMinutes] = useState(String(r?.windowMinutes || 15));
  const [errorRate, setErrorRate] = useState(r?.errorRatePercent ? String(r.errorRatePercent) : "");
  const [minCalls, setMinCalls] = useState(String(r?.minCalls ?? 20));
  const [p95, setP95] = useState(r?.p95LatencyMs ? String(r.p95LatencyMs) : "");
  const [scopeKind, setScopeKind] = useState<AlertScopeKind>(r?.scope?.kind || AlertScopeKind.PROJECT);
  const [scopeValue, setScopeValue] = useState(r?.scope?.value ?? "");
  const [metadataKey, setMetadataKey] = useState(r?.scope?.metadataKey ?? "");
  const [thresholds, setThresholds] = useState(r ? r.thresholdsPercent.join(", ") : "");
  const [destinationIds, setDestinationIds] = useState<string[]>(r?.destinationIds ?? []);
  const [error, setError] = useState<string>();

  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    const rule = create(AlertRuleSchema, {
      id: r?.id ?? "",
      name,
      kind,
      muted: r?.muted ?? false,
      scope: { kind: scopeKind, value: scopeKind === AlertScopeKind.PROJECT ? "" : scopeValue, metadataKey },
      thresholdsPercent: thresholds.trim() === "" ? [] : thresholds.split(",").map((t) => numberOf(t)),
      budgetUsd: numberOf(budget),
      window: { kind: windowKind, rollingHours: windowKind === AlertWindowKind.ROLLING_HOURS ? numberOf(rollingHours) : 0 },
      windowMinutes: numberOf(windowMinutes),
      errorRatePercent: numberOf(errorRate),
      minCalls: numberOf(minCalls),
      p95LatencyMs: numberOf(p95),
      destinationIds,
    });
    try {
      await props.onSave(rule);
    } catch (e) {
      setError(messageOf(e));
    }
  };
  const trailing = kind === AlertKind.ERRORS || kind === AlertKind.LATENCY;
  return (
    <form class="card stack narrow" data-section="rule-form" onSubmit={submit}>
      <h2>{r ? `Edit "${r.name}"` : "New alert rule"}</h2>
      <label>
        Name
        <input name="rule-name" maxLength={200} placeholder="e.g. Daily spend" value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <label>
        Watch
        <select name="rule-kind" value={kind} onChange={(e) => setKind(Number(e.currentTarget.value) as AlertKind)}>
          {kindNames.map(([k, label]) => (
            <option value={k}>{label}</option>
          ))}
        </select>
      </label>
      {kind === AlertKind.SPEND && (
        <>
          <label>
            Budget (USD)
            <input name="budget-usd" inputMode="decimal" required value={budget} onInput={(e) => setBudget(e.currentTarget.value)} />
          </label>
          <label>
            Window (in the project's time zone)
            <select name="window-kind" value={windowKind} onChange={(e) => setWindowKind(Number(e.currentTarget.value) as AlertWindowKind)}>
              {windowNames.map(([k, label]) => (
                <option value={k}>{label}</option>
              ))}
            </select>
          </label>
          {windowKind === AlertWindowKind.ROLLING_HOURS && (
            <label>
              Hours (1 to 744)
              <input name="rolling-hours" inputMode="numeric" value={rollingHours} onInput={(e) => setRollingHours(e.currentTarget.value)} />
            </label>
          )}
        </>
      )}
      {trailing && (
        <label>
          Over the last … minutes (1 to 1440)
          <input name="window-minutes" inputMode="numeric" value={windowMinutes} onInput={(e) => setWindowMinutes(e.currentTarget.value)} />
        </label>
      )}
      {kind === AlertKind.ERRORS && (
        <>
          <label>
            Error rate above (%)
            <input name="error-rate" inputMode="decimal" required value={errorRate} onInput={(e) => setErrorRate(e.currentTarget.value)} />
          </label>
          <label>
            With at least … calls
            <input name="min-calls" inputMode="numeric" value={minCalls} onInput={(e) => setMinCalls(e.currentTarget.value)} />
          </label>
        </>
      )}
      {kind === AlertKind.LATENCY && (
        <label>
          p95 latency above (ms)
          <input name="p95-ms" inputMode="numeric" required value={p95} onInput={(e) => setP95(e.currentTarget.value)} />
        </label>
      )}
      <label>
        Calls counted
        <select name="scope-kind" value={scopeKind} onChange={(e) => setScopeKind(Number(e.currentTarget.value) as AlertScopeKind)}>
          {scopeNames
            .filter(([k]) => kind !== AlertKind.QUOTA || k === AlertScopeKind.PROJECT || k === AlertScopeKind.KEY)
            .map(([k, label]) => (
              <option value={k}>{label}</option>
            ))}
        </select>
      </label>
      {scopeKind === AlertScopeKind.METADATA && (
        <label>
          Metadata key
          <input name="metadata-key" required value={metadataKey} onInput={(e) => setMetadataKey(e.currentTarget.value)} />
        </label>
      )}
      {scopeKind !== AlertScopeKind.PROJECT && (
        <label>
          {scopeKind === AlertScopeKind.KEY ? "Key id" : "Value"}
          <input name="scope-value" required value={scopeValue} onInput={(e) => setScopeValue(e.currentTarget.value)} />
        </label>
      )}
      {kind !== AlertKind.UNPRICED && (
        <label>
          Notify at (% of the limit, ascending)
          <input
            name="thresholds"
            placeholder={`default: ${defaultThresholds[kind] ?? ""}`}
            value={thresholds}
            onInput={(e) => setThresholds(e.currentTarget.value)}
          />
        </label>
      )}
      <fieldset class="stack">
        <legend>Notify</legend>
        {props.destinations.length === 0 && <p class="muted small">No destinations yet: add one below. Without one, firings are only recorded here.</p>}
        {props.destinations.map((d) => (
          <label class="inline">
            <input
              type="checkbox"
              name="rule-destination"
              value={d.id}
              checked={destinationIds.includes(d.id)}
              onChange={(e) =>
                setDestinationIds(e.currentTarget.checked ? [...destinationIds, d.id] : destinationIds.filter((id) => id !== d.id))
              }
            />{" "}
            {d.name}
          </label>
        ))}
      </fieldset>
      <div class="row">
        <button type="submit" class="primary">
          {r ? "Save rule" : "Create rule"}
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
      <ErrorNote error={error} />
    </form>
  );
}
