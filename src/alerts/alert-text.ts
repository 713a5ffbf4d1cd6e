import { timestampDate } from "@bufbuild/protobuf/wkt";
import { type AlertEvent, AlertKind, type AlertScope, AlertScopeKind } from "../../gen/calltrace/v1/alert_pb.js";

/** Readable lines about an event, shared by the Slack message and the mail. */

export function scopeText(scope: AlertScope | undefined): string {
  if (!scope || scope.kind === AlertScopeKind.PROJECT || scope.kind === AlertScopeKind.UNSPECIFIED) return "the whole project";
  const names: Record<number, string> = {
    [AlertScopeKind.KEY]: "key",
    [AlertScopeKind.USER]: "user",
    [AlertScopeKind.TAG]: "tag",
    [AlertScopeKind.MODEL]: "model",
    [AlertScopeKind.ENVIRONMENT]: "environment",
  };
  return scope.kind === AlertScopeKind.METADATA ? `metadata ${scope.metadataKey}=${scope.value}` : `${names[scope.kind]} ${scope.value}`;
}

function amount(kind: AlertKind, value: number): string {
  switch (kind) {
    case AlertKind.SPEND:
      return `$${value.toFixed(value < 10 ? 4 : 2)}`;
    case AlertKind.ERRORS:
      return `${value.toFixed(1)} %`;
    case AlertKind.LATENCY:
      return `${Math.round(value)} ms`;
    default:
      return `${value}`;
  }
}

const what: Record<number, string> = {
  [AlertKind.SPEND]: "Spend",
  [AlertKind.ERRORS]: "Error rate",
  [AlertKind.LATENCY]: "p95 latency",
  [AlertKind.UNPRICED]: "Unpriced calls",
  [AlertKind.QUOTA]: "Monthly quota",
};

/** One line: what crossed what, e.g. `Spend of tag chat reached 80 % of $5.00: $4.2000`. */
export function headline(event: AlertEvent): string {
  const name = event.ruleName ? `${event.ruleName}: ` : "";
  if (event.test) return `${name}test event from calltrace`;
  if (event.kind === AlertKind.UNPRICED) return `${name}calls to ${event.model || "a model"} that the price table does not know`;
  const subject = `${what[event.kind] ?? "Value"} of ${scopeText(event.scope)}`;
  const verb = event.resolved ? "is back under" : "reached";
  return `${name}${subject} ${verb} ${event.thresholdPercent} % of ${amount(event.kind, event.thresholdValue)}: ${amount(event.kind, event.measuredValue)}`;
}

/** The window, e.g. `2026-11-26 00:00 – 2026-11-27 00:00 UTC`; "" when the event has none. */
export function windowText(event: AlertEvent): string {
  if (!event.windowStart || !event.windowEnd) return "";
  const at = (d: Date) => d.toISOString().slice(0, 16).replace("T", " ");
  return `${at(timestampDate(event.windowStart))} – ${at(timestampDate(event.windowEnd))} UTC`;
}
