import { type DescField, ScalarType } from "@bufbuild/protobuf";
import { StoredTraceSchema } from "../../gen/calltrace/v1/trace_pb.js";
import type { JsonSchema } from "./trace-json-schema.js";

/**
 * The JSON Schema of a stored trace as the read API and the JSONL download write it
 * (download/trace-lines.ts: the contract's field names, every implicit field present, an unset
 * optional field left out), read off the descriptor so a new StoredTrace field is documented at once.
 */
export function storedTraceJsonSchema(): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const field of StoredTraceSchema.fields) {
    properties[field.name] = valueSchema(field);
    // called_at is written only for a trace that carried one.
    if (!field.proto.proto3Optional && field.name !== "called_at") required.push(field.name);
  }
  return {
    title: "StoredTrace",
    description: "A stored trace as the JSONL download writes it (StoredTrace in proto/calltrace/v1/trace.proto, with its field names).",
    type: "object",
    properties,
    required,
    additionalProperties: false,
  };
}

function valueSchema(field: DescField): JsonSchema {
  switch (field.fieldKind) {
    case "scalar":
      return scalarSchema(field.scalar, field.name);
    case "enum":
      return { type: "string", enum: field.enum.values.map((v) => v.name) };
    case "message":
      if (field.message.typeName === "google.protobuf.Timestamp") return { type: "string", format: "date-time" };
      break;
    case "list":
      if (field.listKind === "scalar") return { type: "array", items: scalarSchema(field.scalar, field.name) };
      break;
    case "map":
      if (field.mapKind === "scalar") return { type: "object", additionalProperties: scalarSchema(field.scalar, field.name) };
      break;
  }
  throw new Error(`openapi: no JSON Schema for StoredTrace.${field.name}`);
}

function scalarSchema(scalar: ScalarType, name: string): JsonSchema {
  switch (scalar) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.INT32:
      return { type: "integer" };
    case ScalarType.DOUBLE:
      return { type: "number" };
    default:
      throw new Error(`openapi: no JSON Schema for the scalar type of StoredTrace.${name}`);
  }
}
