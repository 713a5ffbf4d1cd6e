import { type DescField, type DescMessage, fromBinary, protoInt64, ScalarType } from "@bufbuild/protobuf";
import { ExportTraceServiceRequestSchema } from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import { AnyValueSchema, InstrumentationScopeSchema, KeyValueSchema } from "../../gen/opentelemetry/proto/common/v1/common_pb.js";
import { ResourceSchema } from "../../gen/opentelemetry/proto/resource/v1/resource_pb.js";
import {
  ResourceSpansSchema,
  ScopeSpansSchema,
  Span_EventSchema,
  SpanSchema,
  StatusSchema,
} from "../../gen/opentelemetry/proto/trace/v1/trace_pb.js";
import { type AttributeValue, type Attributes, exportOfMessage, type OtlpExport, type OtlpSpan } from "./otlp-export.js";

/**
 * An ExportTraceServiceRequest in protobuf, read by `readExport` when it can, else by protobuf-es,
 * which decides what is valid: throws protobuf-es's error for bytes that are not one.
 */
export function exportFromBinary(body: Uint8Array): OtlpExport {
  return readExport(body) ?? exportByProtobufEs(body);
}

/** An ExportTraceServiceRequest read by protobuf-es alone. */
export function exportByProtobufEs(body: Uint8Array): OtlpExport {
  return exportOfMessage(fromBinary(ExportTraceServiceRequestSchema, body));
}

/** How protobuf Exports are read: with this reader first (OTLP_READER, on by default), or by protobuf-es alone. */
export function exportDecoder(useReader: boolean): (body: Uint8Array) => OtlpExport {
  return useReader ? exportFromBinary : exportByProtobufEs;
}

/**
 * A reader of binary ExportTraceServiceRequests that builds only what the mapping reads (D44),
 * without protobuf-es's message objects for every span, attribute and value. It takes only plainly
 * well-formed input: every field of the wire type its schema gives and inside its message, valid
 * UTF-8, no groups, no packed lists, no repeated singular message, varints in at most 10 bytes
 * (tags in 4). Anything else it leaves to protobuf-es (`undefined`), which then accepts or refuses
 * the body as it always did: what this reader takes, protobuf-es takes too, and reads the same.
 * Fields it does not read are checked against the generated schema as protobuf-es would read them.
 */
export function readExport(body: Uint8Array): OtlpExport | undefined {
  buf = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  pos = 0;
  try {
    const end = buf.length;
    const resourceSpans: OtlpExport = [];
    while (pos < end) {
      tag(end);
      if (fieldNo === 1 && wireType === 2) resourceSpans.push(readResourceSpans(length(end), 2));
      else skipField(ExportTraceServiceRequestSchema, end, 1);
    }
    return resourceSpans;
  } catch (error) {
    if (error === leave) return undefined;
    throw error;
  } finally {
    buf = empty;
  }
}

/** Thrown inside the reader for anything it leaves to protobuf-es. */
const leave = new Error("left to protobuf-es");
/** Deeper nesting (arrays in arrays) is left to protobuf-es, whose limit is 100. */
const maxDepth = 32;
const empty = Buffer.alloc(0);

// The reader's state: one Export is read at a time, synchronously.
let buf: Buffer = empty;
let pos = 0;
let fieldNo = 0;
let wireType = 0;
/** The last varint's low and high 32 bits, as protobuf-es splits them. */
let lo = 0;
let hi = 0;

function readResourceSpans(end: number, depth: number): OtlpExport[number] {
  const attributes: Attributes = new Map();
  const scopeSpans: OtlpExport[number]["scopeSpans"] = [];
  let resource = false;
  while (pos < end) {
    tag(end);
    if (fieldNo === 1 && wireType === 2 && !resource) {
      resource = true;
      const resourceEnd = length(end);
      while (pos < resourceEnd) {
        tag(resourceEnd);
        if (fieldNo === 1 && wireType === 2) readKeyValue(length(resourceEnd), depth + 2, attributes);
        else skipField(ResourceSchema, resourceEnd, depth + 1);
      }
    } else if (fieldNo === 2 && wireType === 2) scopeSpans.push(readScopeSpans(length(end), depth + 1));
    else if (fieldNo === 1) throw leave;
    else skipField(ResourceSpansSchema, end, depth);
  }
  return { attributes, scopeSpans };
}

function readScopeSpans(end: number, depth: number): OtlpExport[number]["scopeSpans"][number] {
  let scope = "";
  let scoped = false;
  const spans: OtlpSpan[] = [];
  while (pos < end) {
    tag(end);
    if (fieldNo === 1 && wireType === 2 && !scoped) {
      scoped = true;
      const scopeEnd = length(end);
      while (pos < scopeEnd) {
        tag(scopeEnd);
        if (fieldNo === 1 && wireType === 2) scope = text(scopeEnd);
        else skipField(InstrumentationScopeSchema, scopeEnd, depth + 1);
      }
    } else if (fieldNo === 2 && wireType === 2) spans.push(readSpan(length(end), depth + 1));
    else if (fieldNo === 1) throw leave;
    else skipField(ScopeSpansSchema, end, depth);
  }
  return { scope, spans };
}

function readSpan(end: number, depth: number): OtlpSpan {
  const span: OtlpSpan = {
    traceId: "",
    spanId: "",
    parentSpanId: "",
    startTimeUnixNano: 0n,
    endTimeUnixNano: 0n,
    attributes: new Map(),
    status: undefined,
    events: [],
  };
  while (pos < end) {
    tag(end);
    if (wireType === 2 && fieldNo === 1) span.traceId = hex(end);
    else if (wireType === 2 && fieldNo === 2) span.spanId = hex(end);
    else if (wireType === 2 && fieldNo === 4) span.parentSpanId = hex(end);
    else if (wireType === 1 && fieldNo === 7) span.startTimeUnixNano = fixed64(end);
    else if (wireType === 1 && fieldNo === 8) span.endTimeUnixNano = fixed64(end);
    else if (wireType === 2 && fieldNo === 9) readKeyValue(length(end), depth + 1, span.attributes);
    else if (wireType === 2 && fieldNo === 11) span.events.push(readEvent(length(end), depth + 1));
    else if (wireType === 2 && fieldNo === 15 && span.status === undefined) span.status = readStatus(length(end), depth + 1);
    else if (fieldNo === 15) throw leave;
    else skipField(SpanSchema, end, depth);
  }
  return span;
}

function readEvent(end: number, depth: number): OtlpSpan["events"][number] {
  const event = { name: "", attributes: new Map() as Attributes };
  while (pos < end) {
    tag(end);
    if (fieldNo === 2 && wireType === 2) event.name = text(end);
    else if (fieldNo === 3 && wireType === 2) readKeyValue(length(end), depth + 1, event.attributes);
    else skipField(Span_EventSchema, end, depth);
  }
  return event;
}

function readStatus(end: number, depth: number): NonNullable<OtlpSpan["status"]> {
  const status = { code: 0, message: "" };
  while (pos < end) {
    tag(end);
    if (fieldNo === 2 && wireType === 2) status.message = text(end);
    else if (fieldNo === 3 && wireType === 0) {
      varint(end);
      status.code = lo; // int32, as protobuf-es reads an open enum
    } else skipField(StatusSchema, end, depth);
  }
  return status;
}

/** A KeyValue into `into`, as protobuf-es and attributesOf together would put it: only when it has a value. */
function readKeyValue(end: number, depth: number, into: Attributes): void {
  if (depth > maxDepth) throw leave;
  let key = "";
  let value: AttributeValue | undefined;
  while (pos < end) {
    tag(end);
    if (fieldNo === 1 && wireType === 2) key = text(end);
    else if (fieldNo === 2 && wireType === 2 && value === undefined) value = readAnyValue(length(end), depth + 1);
    else if (fieldNo === 2)
      throw leave; // a second value would be merged into the first
    else skipField(KeyValueSchema, end, depth);
  }
  if (value !== undefined) into.set(key, value);
}

/** AnyValue's oneof by field number; the values the mapping does not read are these objects, shared. */
const valueCases = new Map(
  AnyValueSchema.fields.filter((f) => f.oneof !== undefined).map((f) => [f.number, { case: f.localName } as AttributeValue]),
);

function readAnyValue(end: number, depth: number): AttributeValue {
  let value: AttributeValue = { case: undefined };
  let set = false;
  while (pos < end) {
    tag(end);
    if (valueCases.has(fieldNo)) {
      // More than one of the oneof is rare and merges in ways best left to protobuf-es.
      if (set) throw leave;
      set = true;
    }
    if (fieldNo === 1 && wireType === 2) value = { case: "stringValue", value: text(end) };
    else if (fieldNo === 2 && wireType === 0) {
      varint(end);
      value = { case: "boolValue", value: lo !== 0 || hi !== 0 };
    } else if (fieldNo === 3 && wireType === 0) {
      varint(end);
      value = { case: "intValue", value: protoInt64.dec(lo, hi) };
    } else if (fieldNo === 4 && wireType === 1) {
      if (pos + 8 > end) throw leave;
      value = { case: "doubleValue", value: buf.readDoubleLE(pos) };
      pos += 8;
    } else {
      const number = fieldNo; // skipField reads the value's own tags
      skipField(AnyValueSchema, end, depth);
      value = valueCases.get(number) ?? value;
    }
  }
  return value;
}

/** Checks a field this reader does not keep, as its schema says protobuf-es reads it; skips an unknown one. */
function skipField(desc: DescMessage, end: number, depth: number): void {
  const field = fieldsOf(desc).get(fieldNo);
  if (field === undefined) skipUnknown(end);
  else if (field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message")) {
    if (wireType !== 2) throw leave;
    skipMessage(field.message, length(end), depth + 1);
  } else if (field.fieldKind === "scalar") skipScalar(field.scalar, end);
  else if (field.fieldKind === "enum") skipScalar(ScalarType.INT32, end);
  // A packed list (length-delimited numbers) is left to protobuf-es by skipScalar's wire type check.
  else if (field.fieldKind === "list") skipScalar(field.listKind === "enum" ? ScalarType.INT32 : field.scalar, end);
  else throw leave;
}

function skipMessage(desc: DescMessage, end: number, depth: number): void {
  if (depth > maxDepth) throw leave;
  while (pos < end) {
    tag(end);
    skipField(desc, end, depth);
  }
}

function skipScalar(type: ScalarType, end: number): void {
  switch (type) {
    case ScalarType.STRING:
      if (wireType !== 2) throw leave;
      text(end);
      break;
    case ScalarType.BYTES:
      if (wireType !== 2) throw leave;
      pos = length(end);
      break;
    case ScalarType.DOUBLE:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      skipBytes(1, 8, end);
      break;
    case ScalarType.FLOAT:
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
      skipBytes(5, 4, end);
      break;
    default:
      if (wireType !== 0) throw leave;
      varint(end);
  }
}

function skipUnknown(end: number): void {
  if (wireType === 0) varint(end);
  else if (wireType === 1) skipBytes(1, 8, end);
  else if (wireType === 2) pos = length(end);
  else if (wireType === 5) skipBytes(5, 4, end);
  else throw leave; // groups, and wire types protobuf-es refuses
}

function skipBytes(expectedWireType: number, size: number, end: number): void {
  if (wireType !== expectedWireType || pos + size > end) throw leave;
  pos += size;
}

const fieldTables = new Map<DescMessage, Map<number, DescField>>();

function fieldsOf(desc: DescMessage): Map<number, DescField> {
  let table = fieldTables.get(desc);
  if (table === undefined) fieldTables.set(desc, (table = new Map(desc.fields.map((f) => [f.number, f]))));
  return table;
}

/** A tag of at most 4 bytes (field numbers up to 2^25), with a wire type protobuf-es knows. */
function tag(end: number): void {
  const start = pos;
  varint(end);
  if (pos - start > 4) throw leave;
  fieldNo = lo >>> 3;
  wireType = lo & 7;
  if (fieldNo === 0 || wireType > 5) throw leave;
}

/** A length prefix: the end of what it measures, which must lie within `end`. */
function length(end: number): number {
  varint(end);
  if (hi !== 0 || lo < 0 || pos + lo > end) throw leave;
  return pos + lo;
}

/** A string, which must be valid UTF-8 (protobuf-es checks proto3 strings). */
function text(end: number): string {
  const stop = length(end);
  const value = buf.toString("utf8", pos, stop);
  // Node decodes invalid UTF-8 to U+FFFD; a real U+FFFD is left to protobuf-es too.
  if (value.includes("\uFFFD")) throw leave;
  pos = stop;
  return value;
}

function hex(end: number): string {
  const stop = length(end);
  const value = buf.toString("hex", pos, stop);
  pos = stop;
  return value;
}

function fixed64(end: number): bigint {
  if (pos + 8 > end) throw leave;
  const value = buf.readBigUInt64LE(pos);
  pos += 8;
  return value;
}

/** A varint of at most 10 bytes within `end`, split as protobuf-es splits it (its 10th byte at most 1). */
function varint(end: number): void {
  lo = 0;
  hi = 0;
  let b = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    if (pos >= end) throw leave;
    b = buf[pos++]!;
    lo |= (b & 0x7f) << shift;
    if (b < 0x80) return;
  }
  if (pos >= end) throw leave;
  b = buf[pos++]!;
  lo |= (b & 0x0f) << 28;
  hi = (b & 0x70) >> 4;
  if (b < 0x80) return;
  for (let shift = 3; shift < 31; shift += 7) {
    if (pos >= end) throw leave;
    b = buf[pos++]!;
    hi |= (b & 0x7f) << shift;
    if (b < 0x80) return;
  }
  if (pos >= end) throw leave;
  b = buf[pos++]!;
  if (b > 1) throw leave;
  hi |= b << 31;
}
