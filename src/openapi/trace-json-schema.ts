import { type DescField, type DescMessage, getOption, ScalarType } from "@bufbuild/protobuf";
import { type FieldRules, field as fieldRules, message as messageRules } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";

/** A JSON Schema (2020-12) object, as OpenAPI 3.1 embeds it. */
export type JsonSchema = Record<string, unknown>;

const int32Max = 2147483647;
const int32Min = -2147483648;

/**
 * The JSON Schema of a contract message as the REST edge reads it (D4, D5): its JSON field
 * names, types and protovalidate rules, read off the generated descriptor so the two cannot
 * drift. A rule this function cannot express throws, so a new rule in the .proto fails the
 * OpenAPI test until it is translated here.
 */
export function messageJsonSchema(
  message: DescMessage,
  descriptions: Record<string, string>,
  messageRuleSchemas: Record<string, JsonSchema>,
): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const field of message.fields) {
    const description = descriptions[field.name];
    if (description === undefined) throw new Error(`openapi: no description for ${message.typeName}.${field.name}`);
    const rules = getOption(field, fieldRules);
    const schema: JsonSchema = { description, ...fieldSchema(field, rules) };
    if (rules.required) {
      required.push(field.jsonName);
      // `required` on a string without presence means "not empty".
      if (schema.type === "string" && !field.proto.proto3Optional) schema.minLength = 1;
    }
    if (field.fieldKind === "scalar") Object.assign(schema, ruleSchema(field, rules.type));
    // D5: a present field set to null counts as missing, which is fine for an optional field.
    if (!rules.required) schema.type = [schema.type, "null"];
    properties[field.jsonName] = schema;
  }
  const schema: JsonSchema = { type: "object", properties, required, additionalProperties: true };
  const cel = getOption(message, messageRules).cel;
  const conditions: JsonSchema[] = [];
  for (const rule of cel) {
    const translated = messageRuleSchemas[rule.id];
    if (!translated) throw new Error(`openapi: no JSON Schema for the CEL rule ${rule.id} of ${message.typeName}`);
    conditions.push(translated);
  }
  if (conditions.length > 0) schema.allOf = conditions;
  return schema;
}

/** An empty list, an unset oneof ({} or {case: undefined}), or undefined. */
function isUnset(value: unknown): boolean {
  if (value === undefined) return true;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === "object" && value !== null) {
    const oneof = value as { case?: unknown };
    return Object.keys(value).length === 0 || ("case" in value && oneof.case === undefined);
  }
  return false;
}

/** A scalar's JSON type, or an array or object of scalars with their element rules (`repeated`, `map`). */
function fieldSchema(field: DescField, rules: FieldRules): JsonSchema {
  if (field.fieldKind === "scalar") return scalarSchema(field.scalar, field.name);
  const typed = rules.type;
  if (field.fieldKind === "list" && field.listKind === "scalar") {
    const repeated = typed.case === "repeated" ? typed.value : undefined;
    const items = { ...scalarSchema(field.scalar, field.name), ...elementRules(field, repeated?.items) };
    return { type: "array", items, ...(repeated?.maxItems ? { maxItems: Number(repeated.maxItems) } : {}) };
  }
  if (field.fieldKind === "map" && field.mapKind === "scalar") {
    const map = typed.case === "map" ? typed.value : undefined;
    const values = { ...scalarSchema(field.scalar, field.name), ...elementRules(field, map?.values) };
    const keys = { type: "string", ...elementRules(field, map?.keys) };
    return {
      type: "object",
      additionalProperties: values,
      propertyNames: keys,
      ...(map?.maxPairs ? { maxProperties: Number(map.maxPairs) } : {}),
    };
  }
  // Bounds that depend on the clock and the project (D58) are described, not expressed.
  if (field.fieldKind === "message" && field.message.typeName === "google.protobuf.Timestamp") return { type: "string", format: "date-time" };
  throw new Error(`openapi: no JSON Schema for the field ${field.name}`);
}

function elementRules(field: DescField, rules: FieldRules | undefined): JsonSchema {
  return rules ? ruleSchema(field, rules.type) : {};
}

function scalarSchema(scalar: ScalarType, name: string): JsonSchema {
  switch (scalar) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.INT32:
      return { type: "integer", format: "int32", minimum: int32Min, maximum: int32Max };
    case ScalarType.DOUBLE:
      return { type: "number", format: "double" };
    default:
      throw new Error(`openapi: no JSON Schema for the scalar type of ${name}`);
  }
}

/** protovalidate's string, int32 and double rules as JSON Schema keywords. */
function ruleSchema(field: DescField, type: { case: string | undefined; value?: unknown }): JsonSchema {
  if (type.case === undefined) return {};
  const rules = type.value as Record<string, unknown>;
  const out: JsonSchema = {};
  const known = new Set([
    "$typeName",
    "in",
    "notIn",
    "example",
    "wellKnown",
    "lessThan",
    "greaterThan",
    "maxLen",
    "minLen",
    "finite",
    "pattern",
  ]);
  for (const [name, value] of Object.entries(rules)) {
    // Object.entries sees own (set) fields only.
    if (name === "$typeName" || name === "example" || isUnset(value)) continue;
    if (!known.has(name) || name === "notIn" || name === "wellKnown")
      throw new Error(`openapi: no JSON Schema for the rule ${type.case}.${name} of ${field.name}`);
  }
  // Only the rules set in the .proto: an unset proto2 field reads as its default (0) through the prototype.
  const set = (name: string) => (Object.hasOwn(rules, name) && !isUnset(rules[name]) ? rules[name] : undefined);
  const within = set("in") as unknown[] | undefined;
  if (within) out.enum = within.map((v) => (typeof v === "bigint" ? Number(v) : v));
  if (set("maxLen") !== undefined) out.maxLength = Number(set("maxLen"));
  if (set("minLen") !== undefined) out.minLength = Number(set("minLen"));
  if (set("pattern") !== undefined) out.pattern = set("pattern");
  const greater = set("greaterThan") as { case?: string; value?: number | bigint } | undefined;
  if (greater?.case === "gte") out.minimum = Number(greater.value);
  if (greater?.case === "gt") out.exclusiveMinimum = Number(greater.value);
  const less = set("lessThan") as { case?: string; value?: number | bigint } | undefined;
  if (less?.case === "lte") out.maximum = Number(less.value);
  if (less?.case === "lt") out.exclusiveMaximum = Number(less.value);
  // `finite` needs nothing: JSON has no Infinity or NaN.
  return out;
}
