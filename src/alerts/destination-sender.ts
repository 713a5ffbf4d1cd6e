import type { Transporter } from "nodemailer";
import type { AlertEvent } from "../../gen/calltrace/v1/alert_pb.js";
import type { DeliveryAttempt, DestinationRecord } from "../store/alert-store.js";
import { sendAlertMail } from "./alert-mail.js";
import { webhookBody } from "./alert-payload.js";
import { internalUrlReason } from "./internal-address.js";
import { isRetryable } from "./retry-schedule.js";
import type { SecretBox } from "./secret-box.js";
import { slackMessage } from "./slack-message.js";
import { webhookHeaders } from "./webhook-signing.js";

export interface SenderOptions {
  box: SecretBox;
  /** Longest an attempt may take (15 s). */
  timeoutMs: number;
  /** SMTP_URL's transport and SMTP_FROM; undefined when mail is not configured. */
  mail?: { transport: Transporter; from: string } | undefined;
  /** ALERT_PRIVATE_URLS: internal addresses may be sent to (D62). */
  privateUrls: boolean;
}

/** How an attempt went, and whether trying again may help. */
export type SendOutcome = Pick<DeliveryAttempt, "outcome" | "responseCode" | "detail"> & { retryable: boolean };

/** Makes one attempt at delivering `event` to `destination`, at `at`. Never throws. */
export async function sendToDestination(
  destination: DestinationRecord,
  event: AlertEvent,
  at: Date,
  options: SenderOptions,
): Promise<SendOutcome> {
  try {
    switch (destination.kind) {
      case "webhook": {
        const body = webhookBody(event);
        const secrets = destination.secrets.filter((s) => !s.expiresAt || s.expiresAt > at).map((s) => options.box.open(s.sealed));
        return await post(destination.url, body, webhookHeaders(event.id, at, body, secrets), options);
      }
      case "slack":
        // A Slack incoming webhook's URL is its credential: it is kept sealed, like a signing secret.
        return await post(options.box.open(destination.secrets[0]!.sealed), slackMessage(event), {}, options);
      case "email":
        if (!options.mail) return { outcome: "network_error", responseCode: 0, detail: "SMTP_URL is not set", retryable: false };
        await sendAlertMail(options.mail.transport, options.mail.from, destination.emails, event);
        return { outcome: "ok", responseCode: 250, detail: "", retryable: false };
    }
  } catch (error) {
    const timedOut = error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError");
    const smtpCode = (error as { responseCode?: number }).responseCode;
    return {
      outcome: timedOut ? "timeout" : "network_error",
      responseCode: 0,
      detail: timedOut ? `no answer within ${options.timeoutMs} ms` : describe(error),
      // An SMTP server's permanent refusal (5xx) is final, as a 4xx is for a webhook.
      retryable: !(smtpCode !== undefined && smtpCode >= 500),
    };
  }
}

async function post(url: string, body: string, headers: Record<string, string>, options: SenderOptions): Promise<SendOutcome> {
  // Checked again at each attempt: a name may have come to resolve inward since the destination was made.
  const internal = options.privateUrls ? undefined : await internalUrlReason(url);
  if (internal) return { outcome: "network_error", responseCode: 0, detail: internal, retryable: false };
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "user-agent": "calltrace-webhooks/1", ...headers },
    body,
    // A redirect is answered as what it is (final), never followed to another host with the signature.
    redirect: "manual",
    signal: AbortSignal.timeout(options.timeoutMs),
  });
  const text = (await response.text()).slice(0, 200);
  if (response.ok) return { outcome: "ok", responseCode: response.status, detail: "", retryable: false };
  return { outcome: "http_error", responseCode: response.status, detail: text, retryable: isRetryable(response.status) };
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const message = cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
  return message.slice(0, 200);
}
