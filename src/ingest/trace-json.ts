import { create, fromJson, ScalarType, type DescField } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { TraceSchema, type Trace } from "../../gen/calltrace/v1/trace_pb.js";
import type { FieldProblem } from "./trace-validation.js";

const int32Max = 2147483647;

/**
 * Reads the REST body into the generated Trace, field by field from the contract's descriptor.
 * Types are strict (D5): a wrongly typed field is reported and left unset, a null counts as
 * missing, unknown fields are ignored (D4). Value rules are left to protovalidate.
 */
export function traceFromJson(body: Record<string, unknown>): { trace: Trace; problems: FieldProblem[] } {
  const trace = create(TraceSchema);
  const problems: FieldProblem[] = [];
  for (const field of TraceSchema.fields) {
    const value = Object.hasOwn(body, field.jsonName) ? body[field.jsonName] : undefined;
    if (value === undefined || value === null) continue;
    const read = readValue(field, value);
    if (typeof read === "string") problems.push({ field: field.name, problem: read });
    else (trace as unknown as Record<string, unknown>)[field.localName] = read.value;
  }
  return { trace, problems };
}

/** The field's value as the message holds it, or what is wrong with its type. */
function readValue(field: DescField, value: unknown): { value: unknown } | string {
  if (field.fieldKind === "message" && field.message.typeName === TimestampSchema.typeName) {
    const timestamp = typeof value === "string" ? timestampOf(value) : undefined;
    return timestamp ? { value: timestamp } : timestampProblem;
  }
  return typeProblem(field, value) ?? { value };
}

function typeProblem(field: DescField, value: unknown): string | undefined {
  if (field.fieldKind === "scalar") return scalarProblem(field.scalar, value, field.name);
  if (field.fieldKind === "list" && field.listKind === "scalar") {
    const wrong = !Array.isArray(value) || value.some((item) => scalarProblem(field.scalar, item, field.name) !== undefined);
    return wrong ? `must be an array of ${scalarNoun(field.scalar)}` : undefined;
  }
  if (field.fieldKind === "map" && field.mapKind === "scalar") {
    const wrong =
      typeof value !== "object" ||
      Array.isArray(value) ||
      Object.values(value as object).some((item) => scalarProblem(field.scalar, item, field.name) !== undefined);
    return wrong ? `must be an object of ${scalarNoun(field.scalar)}` : undefined;
  }
  throw new Error(`trace-json: no JSON reading for field ${field.name}`);
}

const timestampProblem = "must be an RFC 3339 timestamp such as 2026-11-26T19:00:00Z (UTC, Z or an offset)";

/** A JSON timestamp as protobuf's JSON mapping reads it (RFC 3339, year 1 to 9999), or undefined. */
function timestampOf(text: string) {
  try {
    return fromJson(TimestampSchema, text);
  } catch {
    return undefined;
  }
}

function scalarProblem(scalar: ScalarType, value: unknown, name: string): string | undefined {
  switch (scalar) {
    case ScalarType.STRING:
      return typeof value === "string" ? undefined : "must be a string";
    case ScalarType.INT32:
      // Negative integers pass here so that the contract's own `gte: 0` rule reports them.
      return Number.isInteger(value) && (value as number) <= int32Max && (value as number) >= -int32Max - 1
        ? undefined
        : `must be an integer from 0 to ${int32Max}`;
    case ScalarType.DOUBLE:
      return typeof value === "number" ? undefined : "must be a number";
    default:
      throw new Error(`trace-json: no JSON reading for field ${name}`);
  }
}

function scalarNoun(scalar: ScalarType): string {
  return scalar === ScalarType.STRING ? "strings" : "numbers";
}
