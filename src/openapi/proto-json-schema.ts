import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { isInt64 } from "../read-api/contract-json.js";
import type { JsonSchema } from "./trace-json-schema.js";

/**
 * How an answer writes a message: as protobuf-es's toJson does (`proto`: the contract's JSON
 * names, fields at their default left out), or as the read API's contractJson does (`read-api`:
 * the .proto's names, every field but an unset message present, 64-bit counts as numbers).
 */
export type JsonStyle = "proto" | "read-api";

/**
 * The JSON Schema of a message as `style` writes it, read off the descriptor so that a new field
 * is documented at once. For the answers built from the contract (GET /v1/budget, /v1/errors, /v1/runs).
 */
export function protoJsonSchema(message: DescMessage, style: JsonStyle = "proto"): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const field of message.fields) properties[style === "proto" ? field.jsonName : field.name] = fieldSchema(field, style);
  const required = style === "read-api" ? { required: message.fields.filter((f) => f.fieldKind !== "message").map((f) => f.name) } : {};
  return { title: message.name, type: "object", properties, ...required, additionalProperties: false };
}

function fieldSchema(field: DescField, style: JsonStyle): JsonSchema {
  switch (field.fieldKind) {
    case "scalar":
      return scalarSchema(field.scalar, style);
    case "enum":
      return { type: "string", enum: field.enum.values.map((v) => v.name) };
    case "message":
      return messageSchema(field.message, style);
    case "list":
      return { type: "array", items: field.listKind === "message" ? messageSchema(field.message, style) : field.listKind === "enum" ? { type: "string", enum: field.enum.values.map((v) => v.name) } : scalarSchema(field.scalar, style) };
    case "map":
      throw new Error(`openapi: no JSON Schema for the map ${field.parent.typeName}.${field.name}`);
  }
}

function messageSchema(message: DescMessage, style: JsonStyle): JsonSchema {
  if (message.typeName === "google.protobuf.Timestamp") return { type: "string", format: "date-time" };
  return protoJsonSchema(message, style);
}

function scalarSchema(scalar: ScalarType, style: JsonStyle): JsonSchema {
  if (style === "read-api" && isInt64(scalar)) return { type: "integer" };
  switch (scalar) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.INT32:
    case ScalarType.UINT32:
      return { type: "integer" };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      // protobuf's JSON writes the non-finite values as strings.
      return { anyOf: [{ type: "number" }, { enum: ["Infinity", "-Infinity", "NaN"] }] };
    default:
      throw new Error(`openapi: no JSON Schema for the scalar type ${ScalarType[scalar]}`);
  }
}
