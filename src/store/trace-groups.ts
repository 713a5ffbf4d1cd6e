import { otherValue } from "./value-cap.js";

/** The attributes of a trace that attribute groups are keyed by, as every store holds them. */
export interface AttributeFields {
  serviceName: string | null | undefined;
  userId: string | null | undefined;
  sessionId: string | null | undefined;
  environment: string | null | undefined;
  tags: readonly string[];
  metadata: readonly (readonly [key: string, value: string])[];
}

/** A trace's groups of its tags, or of its metadata with its metadata's service (the service group's value when the trace names none). */
export type Groups = [dimension: string, value: string][];
export interface MetadataGroups {
  groups: Groups;
  service: string | undefined;
}

/**
 * The attribute groups a trace counts in: one per dimension, one per distinct tag, and per
 * metadata entry its key (`metadataKey`) and its value (`m:<key>`), each key right before its value.
 */
export function attributeGroups(t: AttributeFields): Groups {
  return groupsOf(t, tagGroups(t.tags), metadataGroups(t.metadata));
}

/**
 * attributeGroups from a trace's own values and its tags' and metadata's groups, which a writer
 * may keep per distinct tags or metadata (read only: they are shared).
 */
export function groupsOf(t: Omit<AttributeFields, "tags" | "metadata">, tags: Groups, metadata: MetadataGroups): Groups {
  return [
    ["user", t.userId ?? ""],
    ["session", t.sessionId ?? ""],
    ["environment", t.environment ?? ""],
    ["service", t.serviceName ?? metadata.service ?? ""],
    ...tags,
    ...metadata.groups,
  ];
}

export function tagGroups(tags: readonly string[]): Groups {
  return tags.length === 0 ? [["tag", ""]] : [...new Set(tags)].map((tag) => ["tag", tag]);
}

export function metadataGroups(metadata: AttributeFields["metadata"]): MetadataGroups {
  const groups: Groups = metadata.length === 0 ? [["metadataKey", ""]] : [];
  for (const [key, value] of metadata) groups.push(["metadataKey", key], [`m:${key}`, value]);
  return { groups, service: metadata.find(([k]) => k === "service")?.[1] };
}

/**
 * A trace's groups as the roll-ups count them (D54): each value `kept` does not track becomes the
 * dimension's other value, each group once; a metadata key counted as other keeps none of its
 * values, so a client cannot make a dimension per key either.
 */
export function cappedGroups(
  groups: [dimension: string, value: string][],
  kept: (dimension: string, value: string) => string,
): [dimension: string, value: string][] {
  const capped: [string, string][] = [];
  // attributeGroups puts each metadata key right before its value.
  let keyIsOther = false;
  for (const [dimension, value] of groups) {
    if (keyIsOther && dimension.startsWith("m:")) continue;
    const counted = kept(dimension, value);
    if (dimension === "metadataKey") keyIsOther = counted === otherValue;
    // attributeGroups' groups are distinct: only values counted as other can repeat, and a
    // scan of the few groups costs less than a key string per group.
    if (counted === otherValue && capped.some(([d, v]) => d === dimension && v === counted)) continue;
    capped.push([dimension, counted]);
  }
  return capped;
}
