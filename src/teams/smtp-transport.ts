import { createTransport, type Transporter } from "nodemailer";
import { ConfigError } from "../config/config.js";

/** Longest wait for the SMTP server to answer, so a dead server fails a send in seconds, not minutes. */
const timeoutMs = 10_000;

/**
 * The transport of SMTP_URL (`smtp://user:pass@host:port`, or `smtps://` for TLS from the first
 * byte), shared by invitation mail and alert mail.
 */
export function smtpTransport(smtpUrl: string): Transporter {
  if (!URL.canParse(smtpUrl) || !/^smtps?:$/.test(new URL(smtpUrl).protocol)) {
    throw new ConfigError("SMTP_URL: expected smtp://host:port or smtps://host:port, with user:pass@ if the server wants them");
  }
  return createTransport({ url: smtpUrl, connectionTimeout: timeoutMs, greetingTimeout: timeoutMs, socketTimeout: timeoutMs });
}
