import { newId } from "../store/ids.js";
import type { AlertStore, DestinationKind, DestinationRecord, StoredSecret } from "../store/alert-store.js";
import { internalUrlReason } from "./internal-address.js";
import type { SecretBox } from "./secret-box.js";
import { newWebhookSecret } from "./webhook-secret.js";

/** How long the old secret stays valid after a rotation, by default: receivers move over meanwhile. */
export const defaultRotationOverlapMs = 24 * 60 * 60 * 1000;

/** A destination refused for what was asked: `field` names the offending input. */
export class DestinationError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

export interface NewDestinationInput {
  kind: DestinationKind;
  name: string;
  /** Webhook or Slack incoming webhook URL. */
  url?: string | undefined;
  /** Email recipients. */
  emails?: string[] | undefined;
}

const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function httpUrl(url: string | undefined): string {
  if (!url || !URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol))
    throw new DestinationError("url", "expected an http:// or https:// URL");
  return url;
}

/** A Slack URL without its credential (the path after the host), to show. */
function redacted(url: string): string {
  return `${new URL(url).origin}/…`;
}

/**
 * Creating and rotating destinations, shared by AlertService and the CLI. A webhook gets a
 * `whsec_` secret returned once and kept sealed; a Slack URL, which is its own credential, is kept
 * sealed too and shown without its path.
 */
export function destinations(store: AlertStore, box: SecretBox, options: { privateUrls: boolean; now?: () => Date }) {
  const now = options.now ?? (() => new Date());
  /** A URL the service may send to (D62). */
  const sendable = async (input: string | undefined) => {
    const url = httpUrl(input);
    const internal = options.privateUrls ? undefined : await internalUrlReason(url);
    if (internal) throw new DestinationError("url", internal);
    return url;
  };
  const sealed = (plaintext: string): StoredSecret => ({ sealed: box.seal(plaintext), createdAt: now(), expiresAt: undefined });
  return {
    async create(projectId: string, input: NewDestinationInput): Promise<{ destination: DestinationRecord; secret: string }> {
      const name = input.name.trim();
      if (name.length > 200) throw new DestinationError("name", "at most 200 characters");
      const base = { id: newId("dst"), projectId, kind: input.kind, createdAt: now(), emails: [] as string[] };
      switch (input.kind) {
        case "webhook": {
          const url = await sendable(input.url);
          const secret = newWebhookSecret();
          const destination = await store.createDestination({ ...base, name: name || new URL(url).host, url, secrets: [sealed(secret)] });
          return { destination, secret };
        }
        case "slack": {
          const url = await sendable(input.url);
          const destination = await store.createDestination({ ...base, name: name || "Slack", url: redacted(url), secrets: [sealed(url)] });
          return { destination, secret: "" };
        }
        case "email": {
          const emails = (input.emails ?? []).map((e) => e.trim()).filter(Boolean);
          if (emails.length === 0 || emails.length > 20) throw new DestinationError("emails", "give 1 to 20 addresses");
          const bad = emails.find((e) => !emailPattern.test(e));
          if (bad) throw new DestinationError("emails", `${JSON.stringify(bad)} is not an email address`);
          const destination = await store.createDestination({ ...base, name: name || emails.join(", "), url: "", emails, secrets: [] });
          return { destination, secret: "" };
        }
        default:
          throw new DestinationError("kind", "expected webhook, slack or email");
      }
    },

    /**
     * A new secret for a webhook, returned once; the current one stays valid for `overlapMs`
     * (both sign every delivery meanwhile), older ones end now. Undefined when there is no such webhook.
     */
    async rotate(
      projectId: string,
      id: string,
      overlapMs = defaultRotationOverlapMs,
    ): Promise<{ destination: DestinationRecord; secret: string } | undefined> {
      const current = await store.getDestination(projectId, id);
      if (current?.kind !== "webhook") return undefined;
      const at = now();
      const previous = current.secrets.find((s) => !s.expiresAt);
      const secret = newWebhookSecret();
      const kept = previous ? [{ ...previous, expiresAt: new Date(at.getTime() + overlapMs) }] : [];
      const destination = await store.setDestinationSecrets(projectId, id, [sealed(secret), ...kept]);
      return destination && { destination, secret };
    },
  };
}

export type Destinations = ReturnType<typeof destinations>;
