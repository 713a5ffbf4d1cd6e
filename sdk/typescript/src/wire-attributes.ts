import type { TraceAttributes } from "./attributes.js";
import type { Trace } from "./trace.js";

// Limits of the wire contract (proto/calltrace/v1/trace.proto); the server
// refuses a whole trace that breaks one, so values are made to fit instead.
const MAX_ID = 256;
const MAX_ENVIRONMENT = 64;
const MAX_TAGS = 20;
const MAX_TAG = 64;
const MAX_METADATA = 32;
const MAX_METADATA_VALUE = 512;
const METADATA_KEY = /^[A-Za-z0-9_.-]{1,64}$/;

type WireAttributes = Pick<Trace, "user_id" | "session_id" | "environment" | "tags" | "metadata">;

/**
 * The trace fields for `attributes`, every value made valid for the service:
 * over-long strings are cut (by characters, as the service counts them),
 * surplus tags and metadata entries and invalid metadata keys are dropped,
 * non-string values are turned into strings or dropped. Each kind of fix is
 * reported through `warn` with a key, so the caller can warn once per kind.
 * `sdkMetadata` entries (the SDK's own, `calltrace.*`) always fit.
 */
export function wireAttributes(
  attributes: TraceAttributes,
  sdkMetadata: Record<string, string> | undefined,
  warn: (key: string, message: string) => void,
): WireAttributes {
  const wire: WireAttributes = {};
  const userId = text(attributes.userId, MAX_ID, "userId", warn);
  if (userId) wire.user_id = userId;
  const sessionId = text(attributes.sessionId, MAX_ID, "sessionId", warn);
  if (sessionId) wire.session_id = sessionId;
  const environment = text(attributes.environment, MAX_ENVIRONMENT, "environment", warn);
  if (environment) wire.environment = environment;
  if (attributes.tags !== undefined) {
    const tags = tagList(attributes.tags, warn);
    if (tags.length > 0) wire.tags = tags;
  }
  const metadata = metadataMap(attributes.metadata, sdkMetadata, warn);
  if (metadata) wire.metadata = metadata;
  return wire;
}

function tagList(tags: unknown, warn: (key: string, message: string) => void): string[] {
  if (!Array.isArray(tags)) {
    warn("tags.type", "tags must be an array of strings; they were left out");
    return [];
  }
  const kept = new Set<string>();
  for (const tag of tags) {
    const value = text(tag, MAX_TAG, "a tag", warn);
    if (value) kept.add(value);
  }
  if (kept.size <= MAX_TAGS) return [...kept];
  warn("tags.count", `a trace takes at most ${MAX_TAGS} tags; the ones after the first ${MAX_TAGS} were left out`);
  return [...kept].slice(0, MAX_TAGS);
}

function metadataMap(
  metadata: unknown,
  sdkMetadata: Record<string, string> | undefined,
  warn: (key: string, message: string) => void,
): Record<string, string> | undefined {
  if (metadata === undefined) return sdkMetadata && { ...sdkMetadata };
  if (metadata === null || typeof metadata !== "object" || Array.isArray(metadata)) {
    warn("metadata.type", "metadata must be an object of strings; it was left out");
    return sdkMetadata && { ...sdkMetadata };
  }
  const room = MAX_METADATA - (sdkMetadata ? Object.keys(sdkMetadata).length : 0);
  const map: Record<string, string> = {};
  let count = 0;
  for (const [key, raw] of Object.entries(metadata)) {
    if (!METADATA_KEY.test(key)) {
      warn(
        "metadata.key",
        `metadata key ${JSON.stringify(key.slice(0, 80))} is not 1 to 64 of A-Z a-z 0-9 _ . -; such entries are left out`,
      );
      continue;
    }
    const value = text(raw, MAX_METADATA_VALUE, "a metadata value", warn, true);
    if (value === undefined) continue;
    if (count === room) {
      warn("metadata.count", `a trace takes at most ${MAX_METADATA} metadata entries; the rest were left out`);
      break;
    }
    map[key] = value;
    count++;
  }
  Object.assign(map, sdkMetadata);
  return Object.keys(map).length > 0 ? map : undefined;
}

/** A string of at most `max` characters (code points), from a string, number, bigint or boolean. */
function text(
  value: unknown,
  max: number,
  name: string,
  warn: (key: string, message: string) => void,
  keepEmpty = false,
): string | undefined {
  if (value === undefined || value === null) return undefined;
  let string: string;
  if (typeof value === "string") string = value;
  else if (typeof value === "number" || typeof value === "bigint" || typeof value === "boolean") string = String(value);
  else {
    warn(`${name}.type`, `${name} must be a string; a ${typeof value} was left out`);
    return undefined;
  }
  if (string === "" && !keepEmpty) return undefined;
  // UTF-16 length is never below the number of characters: the common case needs no counting.
  if (string.length <= max) return string;
  const characters = Array.from(string);
  if (characters.length <= max) return string;
  warn(`${name}.length`, `${name} is longer than ${max} characters and was cut to ${max}`);
  return characters.slice(0, max).join("");
}
