import type { InvitationMailer } from "./invitations.js";
import { smtpTransport } from "./smtp-transport.js";

/**
 * Sends invitation links over SMTP_URL (`smtp://user:pass@host:port`, or `smtps://` for TLS from
 * the first byte), from SMTP_FROM. A failure rejects with the server's answer; invitations.ts
 * then revokes the invitation it could not deliver.
 */
export function invitationMailer(smtpUrl: string, from: string): InvitationMailer {
  const transport = smtpTransport(smtpUrl);
  return {
    async send({ to, organization, role, url, expiresAt, invitedBy }) {
      const until = expiresAt.toISOString().slice(0, 16).replace("T", " ");
      await transport.sendMail({
        from,
        to,
        subject: `${invitedBy} invites you to ${organization} on calltrace`,
        text: [
          `${invitedBy} invites you to join the organization ${organization} on calltrace as ${role}.`,
          "",
          `Accept the invitation: ${url}`,
          "",
          `The link works once, until ${until} UTC. Sign in or sign up with ${to} to accept it.`,
          "If you did not expect this mail, ignore it.",
        ].join("\n"),
      });
    },
  };
}
