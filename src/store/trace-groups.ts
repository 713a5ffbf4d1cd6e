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

/**
 * The attribute groups a trace counts in: one per dimension, one per distinct tag, and per
 * metadata entry its key (`metadataKey`) and its value (`m:<key>`), each key right before its value.
 */
export function attributeGroups(t: AttributeFields): [dimension: string, value: string][] {
  const groups: [string, string][] = [
    ["user", t.userId ?? ""],
    ["session", t.sessionId ?? ""],
    ["environment", t.environment ?? ""],
    ["service", t.serviceName ?? t.metadata.find(([k]) => k === "service")?.[1] ?? ""],
  ];
  if (t.tags.length === 0) groups.push(["tag", ""]);
  for (const tag of new Set(t.tags)) groups.push(["tag", tag]);
  if (t.metadata.length === 0) groups.push(["metadataKey", ""]);
  for (const [key, value] of t.metadata) groups.push(["metadataKey", key], [`m:${key}`, value]);
  return groups;
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
