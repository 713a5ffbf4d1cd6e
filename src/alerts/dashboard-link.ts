import { timestampMs } from "@bufbuild/protobuf/wkt";
import { type AlertEvent, AlertScopeKind } from "../../gen/calltrace/v1/alert_pb.js";

/** The dashboard's address-bar parameter of each scope (web/src/filters.ts, web/src/attributes.ts). */
const scopeParameter: Partial<Record<AlertScopeKind, string>> = {
  [AlertScopeKind.KEY]: "key",
  [AlertScopeKind.USER]: "user",
  [AlertScopeKind.TAG]: "tag",
  [AlertScopeKind.MODEL]: "model",
  [AlertScopeKind.ENVIRONMENT]: "env",
};

/** A datetime-local value in UTC, as the dashboard's custom range reads it. */
const minute = (ms: number) => new Date(ms).toISOString().slice(0, 16);

/**
 * The dashboard's traces page for the event's project, narrowed to its scope and window
 * (/app/p/<project>/traces?range=custom&from=…&to=…&tag=…), under `publicUrl`.
 */
export function dashboardLink(publicUrl: string, event: AlertEvent): string {
  const query = new URLSearchParams();
  if (event.windowStart && event.windowEnd) {
    query.set("range", "custom");
    query.set("from", minute(timestampMs(event.windowStart)));
    // The dashboard's range ends on a whole minute: round up so the window's last calls are in it.
    query.set("to", minute(timestampMs(event.windowEnd) + 59_999));
  } else {
    query.set("range", "24h");
  }
  const scope = event.scope;
  if (scope) {
    const name = scope.kind === AlertScopeKind.METADATA ? `meta.${scope.metadataKey}` : scopeParameter[scope.kind];
    if (name && scope.value) query.set(name, scope.value);
  }
  if (event.model) query.set("model", event.model);
  return `${publicUrl.replace(/\/+$/, "")}/app/p/${encodeURIComponent(event.projectId)}/traces?${query}`;
}
