/**
 * Who and what a call was for. Set at three levels, each overriding the one
 * before: `init()` (process defaults), `withAttributes()` (a scope) and one
 * call (`withCallAttributes()` or a `calltrace` key in its request).
 *
 * Merge rule: `userId`, `sessionId` and `environment` are replaced by the
 * later level; `tags` are the union of all levels (first occurrence first);
 * `metadata` is merged key by key, the later level winning for a key.
 */
export interface TraceAttributes {
  /** The application's id of its end user or customer, at most 256 characters. */
  userId?: string;
  /** The conversation, thread or run, at most 256 characters. */
  sessionId?: string;
  /** The deployment, such as `production`, at most 64 characters. */
  environment?: string;
  /** Labels such as the feature: at most 20, each at most 64 characters. */
  tags?: readonly string[];
  /** At most 32 entries; keys of 1 to 64 of `A-Z a-z 0-9 _ . -`, values at most 512 characters. */
  metadata?: Readonly<Record<string, string>>;
}

/** `over` applied on top of `base` with the merge rule above. */
export function mergeAttributes(base: TraceAttributes | undefined, over: TraceAttributes | undefined): TraceAttributes {
  if (!over) return base ?? {};
  if (!base) return over;
  const merged: TraceAttributes = { ...base, ...over };
  const baseTags = asTags(base.tags);
  const overTags = asTags(over.tags);
  if (Array.isArray(baseTags) && Array.isArray(overTags)) merged.tags = [...new Set([...baseTags, ...overTags])];
  else merged.tags = overTags ?? baseTags;
  if (isMap(base.metadata) && isMap(over.metadata)) merged.metadata = { ...base.metadata, ...over.metadata };
  else merged.metadata = over.metadata ?? base.metadata;
  // Keys the caller set to undefined on purpose do not erase the base value.
  for (const key of ["userId", "sessionId", "environment"] as const) merged[key] = over[key] ?? base[key];
  return merged;
}

// A lone string is taken as one tag (a common slip in JavaScript); other
// non-arrays pass through to be reported when the trace is made.
function asTags(tags: unknown): readonly string[] | undefined {
  return typeof tags === "string" ? [tags] : (tags as readonly string[] | undefined);
}

function isMap(value: unknown): value is Readonly<Record<string, string>> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
