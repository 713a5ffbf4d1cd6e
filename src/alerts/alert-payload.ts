import { toJson } from "@bufbuild/protobuf";
import { type AlertEvent, AlertEventSchema } from "../../gen/calltrace/v1/alert_pb.js";

/** What a webhook's body says happened (docs/alerts.md). */
export function eventType(event: AlertEvent): "alert.test" | "alert.resolved" | "alert.fired" {
  if (event.test) return "alert.test";
  return event.resolved ? "alert.resolved" : "alert.fired";
}

/**
 * The JSON body of a webhook delivery, as docs/alert-event.schema.json describes it: the Standard
 * Webhooks envelope (`type`, `timestamp`, `data`) around the event's protobuf JSON with its
 * snake_case names and every field present. The same bytes on every attempt, so a receiver may
 * compare them.
 */
export function webhookBody(event: AlertEvent): string {
  const data = toJson(AlertEventSchema, event, { useProtoFieldName: true, alwaysEmitImplicit: true }) as Record<string, unknown>;
  return JSON.stringify({ type: eventType(event), timestamp: data.fired_at, data });
}
