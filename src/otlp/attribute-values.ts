import type { AttributeValue, Attributes } from "./otlp-export.js";

/** A span that is an LLM call but cannot be stored as one; the reason goes into partial_success. */
export class SpanRejection extends Error {}

/**
 * The first of `names` that is set, as text (numbers and booleans in their usual form); undefined
 * when none is. Names come as one string or a constant list: this runs several times per span.
 */
export function textOf(attributes: Attributes, names: string | readonly string[]): string | undefined {
  if (typeof names === "string") return textValue(attributes.get(names));
  for (const name of names) {
    const text = textValue(attributes.get(name));
    if (text !== undefined) return text;
  }
  return undefined;
}

function textValue(value: AttributeValue | undefined): string | undefined {
  switch (value?.case) {
    case "stringValue":
      return value.value === "" ? undefined : value.value;
    case "intValue":
    case "doubleValue":
    case "boolValue":
      return String(value.value);
  }
  return undefined;
}

const int32Max = 2_147_483_647;

/**
 * The first of `names` that is set, as a token count: a whole number from 0 to 2^31-1, sent as an
 * int, a whole double or a numeric string (instrumentations differ). Anything else rejects the span.
 */
export function countOf(attributes: Attributes, names: readonly string[]): number | undefined {
  for (const name of names) {
    const value = attributes.get(name);
    if (value?.case === undefined) continue;
    const count =
      value.case === "intValue"
        ? Number(value.value)
        : value.case === "doubleValue"
          ? value.value
          : value.case === "stringValue" && /^\d{1,10}$/.test(value.value)
            ? Number(value.value)
            : Number.NaN;
    if (!Number.isInteger(count) || count < 0 || count > int32Max) {
      throw new SpanRejection(`${name}: must be a whole number from 0 to ${int32Max}`);
    }
    return count;
  }
  return undefined;
}
