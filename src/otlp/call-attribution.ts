import { ConfigError } from "../config/config.js";
import type { Trace } from "../../gen/calltrace/v1/trace_pb.js";
import type { Attributes } from "./otlp-export.js";
import { textOf } from "./attribute-values.js";
import { bounds, cut } from "./string-bounds.js";

const sessionNames = ["session.id", "gen_ai.conversation.id"];
const environmentNames = ["deployment.environment.name", "deployment.environment"];
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
 * span attributes → metadata under their own names. Set on the call's trace (issue #13's OTLP mapping).
 */
export function addAttribution(trace: Trace, span: Attributes, resource: Attributes, metadataNames: readonly string[]): void {
  const service = textOf(resource, "service.name");
  if (service !== undefined) trace.metadata.service = cut(service, bounds.serviceName);
  for (const name of metadataNames) {
    const value = textOf(span, name);
    // Cut rather than cost the call its trace.
    if (value !== undefined) trace.metadata[name] = cut(value, bounds.metadataValue);
  }
  const userId = textOf(span, "user.id") ?? textOf(resource, "user.id");
  if (userId !== undefined) trace.userId = userId;
  const sessionId = textOf(span, sessionNames) ?? textOf(resource, sessionNames);
  if (sessionId !== undefined) trace.sessionId = sessionId;
  const environment = textOf(span, environmentNames) ?? textOf(resource, environmentNames);
  if (environment !== undefined) trace.environment = environment;
}
