import { Webhook } from "standardwebhooks";

/**
 * The Standard Webhooks headers of one attempt: the event's id (the same on every attempt), the
 * attempt's time, and a `v1,` signature per secret still valid (two during a rotation, space
 * separated, so receivers holding either secret verify it).
 */
export function webhookHeaders(id: string, at: Date, body: string, secrets: string[]): Record<string, string> {
  return {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(" "),
  };
}
