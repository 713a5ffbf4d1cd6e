import type { ExportTraceServiceRequest } from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import type { AnyValue, KeyValue } from "../../gen/opentelemetry/proto/common/v1/common_pb.js";
import type { Span } from "../../gen/opentelemetry/proto/trace/v1/trace_pb.js";

/**
 * An attribute's value as the mapping reads it: AnyValue's oneof, scalars with their value; an
 * array, key-value list, bytes or string-table value only says which it is (the mapping reads none).
 */
export type AttributeValue =
  | { case: "stringValue"; value: string }
  | { case: "boolValue"; value: boolean }
  | { case: "intValue"; value: bigint }
  | { case: "doubleValue"; value: number }
  | { case: "arrayValue" | "kvlistValue" | "bytesValue" | "stringValueStrindex" | undefined; value?: unknown };

/** A span's or resource's attributes by name (the last one wins when a name repeats). */
export type Attributes = Map<string, AttributeValue>;

/** The part of an OTLP span calltrace reads; ids in lower-case hex ("" when unset). */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  startTimeUnixNano: bigint;
  endTimeUnixNano: bigint;
  attributes: Attributes;
  /** undefined when the span has no status message. */
  status: { code: number; message: string } | undefined;
  events: { name: string; attributes: Attributes }[];
}

/** An Export as calltrace reads it: per resource its attributes, per instrumentation scope its name and spans. */
export type OtlpExport = {
  attributes: Attributes;
  scopeSpans: { scope: string; spans: OtlpSpan[] }[];
}[];

/** The Export of a decoded protobuf-es message (OTLP JSON, OTLP/gRPC, and binary the fast reader leaves to protobuf-es). */
export function exportOfMessage(request: ExportTraceServiceRequest): OtlpExport {
  return request.resourceSpans.map((resourceSpans) => ({
    attributes: attributesOf(resourceSpans.resource?.attributes),
    scopeSpans: resourceSpans.scopeSpans.map((scopeSpans) => ({
      scope: scopeSpans.scope?.name ?? "",
      spans: scopeSpans.spans.map(spanOf),
    })),
  }));
}

function spanOf(span: Span): OtlpSpan {
  return {
    traceId: hexId(span.traceId),
    spanId: hexId(span.spanId),
    parentSpanId: hexId(span.parentSpanId),
    startTimeUnixNano: span.startTimeUnixNano,
    endTimeUnixNano: span.endTimeUnixNano,
    attributes: attributesOf(span.attributes),
    status: span.status && { code: span.status.code, message: span.status.message },
    events: span.events.map((event) => ({ name: event.name, attributes: attributesOf(event.attributes) })),
  };
}

function attributesOf(list: KeyValue[] | undefined): Attributes {
  const map: Attributes = new Map();
  for (const { key, value } of list ?? []) if (value) map.set(key, attributeValueOf(value.value));
  return map;
}

function attributeValueOf(value: AnyValue["value"]): AttributeValue {
  switch (value.case) {
    case "stringValue":
    case "boolValue":
    case "intValue":
    case "doubleValue":
      return value;
    default:
      return { case: value.case };
  }
}

/** Lower-case hex of an id's bytes (empty for an unset parent). */
function hexId(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}
