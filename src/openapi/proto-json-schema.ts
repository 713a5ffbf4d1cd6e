import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import type { JsonSchema } from "./trace-json-schema.js";

/**
 * The JSON Schema of a message as protobuf-es's toJson writes it (the contract's JSON names;
 * fields at their default left out, so none is required), read off the descriptor so that a new
 * field is documented at once. For the answers built from the contract (GET /v1/budget).
 */
export function protoJsonSchema(message: DescMessage): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const field of message.fields) properties[field.jsonName] = fieldSchema(field);
  return { title: message.name, type: "object", properties, additionalProperties: false };
}

function fieldSchema(field: DescField): JsonSchema {
  switch (field.fieldKind) {
    case "scalar":
      return scalarSchema(field.scalar);
    case "enum":
      return { type: "string", enum: field.enum.values.map((v) => v.name) };
    case "message":
      return messageSchema(field.message);
    case "list":
      return { type: "array", items: field.listKind === "message" ? messageSchema(field.message) : field.listKind === "enum" ? { type: "string", enum: field.enum.values.map((v) => v.name) } : scalarSchema(field.scalar) };
    case "map":
      throw new Error(`openapi: no JSON Schema for the map ${field.parent.typeName}.${field.name}`);
  }
}

function messageSchema(message: DescMessage): JsonSchema {
  if (message.typeName === "google.protobuf.Timestamp") return { type: "string", format: "date-time" };
  return protoJsonSchema(message);
}

function scalarSchema(scalar: ScalarType): JsonSchema {
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
