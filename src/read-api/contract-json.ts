import { type DescMessage, type MessageShape, ScalarType, toJson } from "@bufbuild/protobuf";

/**
 * A message of the contract as the read API writes it: the .proto's snake_case names (as GET
 * /v1/traces writes a trace), every field present, and 64-bit counts as JSON numbers, as GET
 * /v1/metrics writes its counts (protobuf's JSON would write them as strings).
 */
export function contractJson<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): Record<string, unknown> {
  return countsAsNumbers(schema, toJson(schema, message, { useProtoFieldName: true, alwaysEmitImplicit: true }) as Record<string, unknown>);
}

/** Whether a scalar is one protobuf's JSON writes as a string. */
export function isInt64(scalar: ScalarType): boolean {
  return [ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64].includes(scalar);
}

function countsAsNumbers(schema: DescMessage, json: Record<string, unknown>): Record<string, unknown> {
  for (const field of schema.fields) {
    const value = json[field.name];
    if (field.fieldKind === "scalar" && isInt64(field.scalar)) json[field.name] = Number(value);
    else if (field.fieldKind === "list" && field.listKind === "message") {
      for (const item of value as Record<string, unknown>[]) countsAsNumbers(field.message, item);
    } else if (field.fieldKind === "message" && typeof value === "object" && value !== null) {
      countsAsNumbers(field.message, value as Record<string, unknown>);
    }
  }
  return json;
}
