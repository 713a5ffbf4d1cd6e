import { ConfigError } from "../config/config.js";
import { textOf, type Attributes } from "./span-attributes.js";

/** Who and what a call was for, read off its span and resource (issue #13's OTLP mapping). */
export interface Attribution {
  userId?: string;
  sessionId?: string;
  environment?: string;
  metadata: Record<string, string>;
}

/** Metadata values are cut to the contract's 512 characters rather than cost the call its trace. */
const maxMetadataValue = 512;
const metadataKey = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Parses the OTLP_METADATA_ATTRIBUTES setting: span attribute names, comma-separated, each a
 * valid metadata key (the attribute's name is its key).
 */
export function metadataAttributeNames(setting: string | undefined): string[] {
  const names = (setting ?? "")
    .split(",")
    .map((n) => n.trim())
    .filter((n) => n !== "");
  const invalid = names.filter((n) => !metadataKey.test(n));
  if (invalid.length > 0) {
    throw new ConfigError(
      `OTLP_METADATA_ATTRIBUTES: ${invalid.map((n) => JSON.stringify(n)).join(", ")} cannot be a metadata key (1 to 64 of A-Z a-z 0-9 _ . -)`,
    );
  }
  return names;
}

/**
 * `user.id` → user, `session.id` or `gen_ai.conversation.id` → session,
 * `deployment.environment.name` (or the older `deployment.environment`) → environment, from the
 * span or else its resource; the resource's `service.name` → metadata `service`; the allow-listed
 * span attributes → metadata under their own names.
 */
export function attributionOf(span: Attributes, resource: Attributes, metadataNames: readonly string[]): Attribution {
  const either = (...names: string[]) => textOf(span, ...names) ?? textOf(resource, ...names);
  const metadata: Record<string, string> = {};
  const service = textOf(resource, "service.name");
  if (service !== undefined) metadata.service = service.slice(0, maxMetadataValue);
  for (const name of metadataNames) {
    const value = textOf(span, name);
    if (value !== undefined) metadata[name] = value.slice(0, maxMetadataValue);
  }
  const userId = either("user.id");
  const sessionId = either("session.id", "gen_ai.conversation.id");
  const environment = either("deployment.environment.name", "deployment.environment");
  return {
    ...(userId === undefined ? {} : { userId }),
    ...(sessionId === undefined ? {} : { sessionId }),
    ...(environment === undefined ? {} : { environment }),
    metadata,
  };
}
