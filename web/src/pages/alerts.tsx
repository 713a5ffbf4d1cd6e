import { useState } from "preact/hooks";
import { type AlertRule, AlertKind, AlertWindowKind } from "../../../gen/calltrace/v1/alert_pb.js";
import type { AlertRuleValue } from "../../../gen/calltrace/v1/alert_service_pb.js";
import { scopeText } from "../../../src/alerts/alert-text.js";
import { alerts, messageOf } from "../api.js";
import { AlertRuleForm, kindNames } from "../components/alert-rule-form.js";
import { QueryStatus } from "../components/query-status.js";
import { dateTime, ms, usd } from "../format.js";
import { can, useTeam } from "../team.js";
import { useQuery } from "../use-query.js";
import { AlertDestinations } from "./alert-destinations.js";
import { AlertHistory, DeliveryLog } from "./alert-history.js";
import { ErrorNote } from "../components/outcome.js";

/** The page re-reads rules' values, the history and the log on this interval, as the evaluation moves. */
const refreshMs = 10_000;

const windowNames: Record<number, string> = {
  [AlertWindowKind.DAY]: "per day",
  [AlertWindowKind.WEEK]: "per week",
  [AlertWindowKind.MONTH]: "per month",
};

/** The rule's limit as people say it, e.g. "$5.00 per day" or "error rate above 5 % over 15 min". */
function limitText(rule: AlertRule): string {
  switch (rule.kind) {
    case AlertKind.SPEND: {
      const window = rule.window?.kind === AlertWindowKind.ROLLING_HOURS ? `over the last ${rule.window.rollingHours} h` : windowNames[rule.window?.kind ?? 0];
      return `${usd(rule.budgetUsd)} ${window ?? ""}`;
    }
    case AlertKind.ERRORS:
      return `error rate above ${rule.errorRatePercent} % over ${rule.windowMinutes} min (at least ${rule.minCalls} calls)`;
    case AlertKind.LATENCY:
      return `p95 above ${ms(rule.p95LatencyMs)} over ${rule.windowMinutes} min`;
    case AlertKind.QUOTA:
      return "the monthly quota";
    default:
      return "a call to a model without a price";
  }
}

/** The measured value in the limit's unit. */
function valueText(rule: AlertRule, value: number): string {
  if (rule.kind === AlertKind.SPEND) return usd(value);
  if (rule.kind === AlertKind.ERRORS) return `${value.toFixed(1)} %`;
  if (rule.kind === AlertKind.LATENCY) return ms(value);
  return String(value);
}

/**
 * Alerts: the project's rules with their current value against the limit, their destinations,
 * the firing history and the delivery log. Viewers read; admins create, edit, mute and delete
 * (the server refuses the rest: docs/teams.md).
 */
export function Alerts() {
  const t = useTeam();
  const manage = can(t.membership.role, "project.settings");
  const rules = useQuery(() => alerts.listRules({ projectId: "" }), [t.project.id], refreshMs);
  const destinations = useQuery(async () => (await alerts.listDestinations({ projectId: "" })).destinations, [t.project.id], refreshMs);
  const events = useQuery(async () => (await alerts.listEvents({ projectId: "", limit: 50 })).events, [t.project.id], refreshMs);
  const deliveries = useQuery(async () => (await alerts.listDeliveries({ projectId: "", limit: 50 })).deliveries, [t.project.id], refreshMs);
  const [editing, setEditing] = useState<AlertRule | "new">();
  const [error, setError] = useState<string>();
  const reloadAll = () => {
    rules.reload();
    destinations.reload();
    events.reload();
    deliveries.reload();
  };
  const act = async (call: () => Promise<unknown>) => {
    setError(undefined);
    try {
      await call();
      reloadAll();
    } catch (e) {
      setError(messageOf(e));
    }
  };
  const save = async (rule: AlertRule) => {
    if (rule.id) await alerts.updateRule({ projectId: "", rule });
    else await alerts.createRule({ projectId: "", rule });
    setEditing(undefined);
    reloadAll();
  };
  const disabled = (destinations.data ?? []).filter((d) => d.disabledAt);
  const values = new Map((rules.data?.values ?? []).map((v) => [v.ruleId, v]));
  return (
    <section class="alerts">
      <h1>Alerts</h1>
      {manage &&
        disabled.map((d) => (
          <p class="error" role="alert" data-disabled-destination={d.name}>
            The destination "{d.name}" was disabled on {dateTime(d.disabledAt)} after failing for 3 days
            {d.disabledReason ? ` (${d.disabledReason})` : ""}. Nothing is sent to it until it is enabled again below.
          </p>
        ))}
      <div class="card" data-section="rules">
        <div class="row spread">
          <h2>Rules</h2>
          {manage && editing === undefined && (
            <button type="button" class="primary" onClick={() => setEditing("new")}>
              New rule
            </button>
          )}
        </div>
        <QueryStatus state={rules} what="alert rules" />
        {rules.data && rules.data.rules.length === 0 && <p class="muted">No rules yet.{manage ? " Create one to be told when spend, errors or latency cross a limit." : ""}</p>}
        {rules.data && rules.data.rules.length > 0 && (
          <div class="table-wrap" tabIndex={0} role="region" aria-label="Rules">
            <table>
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Watches</th>
                  <th>Calls counted</th>
                  <th>Now</th>
                  <th>Notifies at</th>
                  <th>
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {rules.data.rules.map((rule) => (
                  <RuleRow
                    rule={rule}
                    value={values.get(rule.id)}
                    manage={manage}
                    onEdit={() => setEditing(rule)}
                    onMute={() => act(() => alerts.muteRule({ projectId: "", ruleId: rule.id, muted: !rule.muted }))}
                    onDelete={() => act(() => alerts.deleteRule({ projectId: "", ruleId: rule.id }))}
                  />
                ))}
              </tbody>
            </table>
          </div>
        )}
        <ErrorNote error={error} />
      </div>
      {manage && editing !== undefined && (
        <AlertRuleForm
          key={editing === "new" ? "new" : editing.id}
          rule={editing === "new" ? undefined : editing}
          destinations={destinations.data ?? []}
          onSave={save}
          onCancel={() => setEditing(undefined)}
        />
      )}
      <AlertDestinations destinations={destinations.data ?? []} manage={manage} onChanged={reloadAll} />
      <AlertHistory events={events.data ?? []} />
      <DeliveryLog deliveries={deliveries.data ?? []} destinations={destinations.data ?? []} manage={manage} onChanged={reloadAll} />
    </section>
  );
}

function RuleRow(props: { rule: AlertRule; value: AlertRuleValue | undefined; manage: boolean; onEdit: () => void; onMute: () => void; onDelete: () => void }) {
  const { rule, value } = props;
  const kind = kindNames.find(([k]) => k === rule.kind)?.[1] ?? "";
  return (
    <tr data-rule={rule.name} data-muted={rule.muted ? "true" : undefined}>
      <td>
        {rule.name}
        {rule.muted && <span class="badge"> muted</span>}
      </td>
      <td class="wrap">
        {kind}: {limitText(rule)}
      </td>
      <td class="wrap">{scopeText(rule.scope)}</td>
      <td data-value>
        {value && value.limit > 0 ? (
          <>
            <meter min={0} max={value.limit} value={Math.min(value.value, value.limit)} aria-label={`${rule.name}: share of the limit`} />{" "}
            {valueText(rule, value.value)} of {valueText(rule, value.limit)} ({Math.round((value.value / value.limit) * 100)} %)
          </>
        ) : value ? (
          valueText(rule, value.value)
        ) : (
          <span class="muted">not measured yet</span>
        )}
      </td>
      <td>{rule.thresholdsPercent.map((p) => `${p} %`).join(", ")}</td>
      <td class="actions">
        {props.manage && (
          <>
            <button type="button" onClick={props.onEdit}>
              Edit<span class="sr-only"> {rule.name}</span>
            </button>
            <button type="button" aria-pressed={rule.muted} onClick={props.onMute}>
              {rule.muted ? "Unmute" : "Mute"}
              <span class="sr-only"> {rule.name}</span>
            </button>
            <button type="button" class="danger" onClick={props.onDelete}>
              Delete<span class="sr-only"> {rule.name}</span>
            </button>
          </>
        )}
      </td>
    </tr>
  );
}
