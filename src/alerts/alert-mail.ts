import type { Transporter } from "nodemailer";
import type { AlertEvent } from "../../gen/calltrace/v1/alert_pb.js";
import { headline, windowText } from "./alert-text.js";

/** Mails an event to an email destination's recipients over SMTP_URL's transport. */
export async function sendAlertMail(transport: Transporter, from: string, to: string[], event: AlertEvent): Promise<void> {
  const window = windowText(event);
  await transport.sendMail({
    from,
    to,
    subject: `[calltrace] ${headline(event)}`,
    text: [
      headline(event),
      "",
      `Project: ${event.projectId}`,
      ...(window ? [`Window: ${window}`] : []),
      ...(event.dashboardUrl ? ["", `Open in calltrace: ${event.dashboardUrl}`] : []),
      "",
      `Event ${event.id}. You get this mail because an alert rule of the project names this address.`,
    ].join("\n"),
    headers: { "X-Calltrace-Event-Id": event.id },
  });
}
