import type { AlertEvent } from "../../gen/calltrace/v1/alert_pb.js";
import { headline, windowText } from "./alert-text.js";

/**
 * A Slack incoming webhook's payload: `text` (the notification's words, and what clients without
 * blocks show) and blocks with the headline, the window and a button into the dashboard.
 */
export function slackMessage(event: AlertEvent): string {
  const title = headline(event);
  const window = windowText(event);
  const context = [`project ${event.projectId}`, window && `window ${window}`].filter(Boolean).join(" · ");
  return JSON.stringify({
    text: title,
    blocks: [
      { type: "section", text: { type: "mrkdwn", text: `*${escapeMrkdwn(title)}*` } },
      { type: "context", elements: [{ type: "mrkdwn", text: escapeMrkdwn(context) }] },
      ...(event.dashboardUrl
        ? [
            {
              type: "actions",
              elements: [{ type: "button", text: { type: "plain_text", text: "Open in calltrace" }, url: event.dashboardUrl }],
            },
          ]
        : []),
    ],
  });
}

/** Slack's mrkdwn treats &, < and > as markup. */
function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
