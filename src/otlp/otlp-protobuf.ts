import { type DescField, type DescMessage, fromBinary, ScalarType } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
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
 * without protobuf-es's message objects for every span, attribute and value. It reads with
 * protobuf-es's public BinaryReader, so every scalar is read as protobuf-es reads it (strings
 * checked as UTF-8, as it checks proto3 strings). It takes only plainly well-formed input: every
 * field of the wire type its schema gives and inside its message, no groups, no packed lists, no
 * repeated singular message, tags in at most 4 bytes. Anything else it leaves to protobuf-es
 * (`undefined`), which then accepts or refuses the body as it always did: what this reader takes,
 * protobuf-es takes too, and reads the same. Fields it does not read are checked against the
 * generated schema as protobuf-es would read them.
 */
export function readExport(body: Uint8Array): OtlpExport | undefined {
  try {
    return new ExportReader(Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength)).read();
  } catch {
    // BinaryReader's errors (cut off, invalid UTF-8, a varint too long) and `leave` alike.
    return undefined;
  }
}

/** Thrown inside the reader for anything it leaves to protobuf-es. */
const leave = new Error("left to protobuf-es");
/** Deeper nesting (arrays in arrays) is left to protobuf-es, whose limit is 100. */
const maxDepth = 32;

/** Wire types. */
const varintType = 0;
const bit64Type = 1;
const delimitedType = 2;
const bit32Type = 5;

/** One Export's read: its reader, and the field whose tag was read last. */
class ExportReader {
  private readonly r: BinaryReader;
  private fieldNo = 0;
  private wireType = 0;

  constructor(buf: Buffer) {
    this.r = new BinaryReader(buf);
  }

  read(): OtlpExport {
    const { r } = this;
    const resourceSpans: OtlpExport = [];
    while (r.pos < r.len) {
      this.tag(r.len);
      if (this.fieldNo === 1 && this.wireType === delimitedType) resourceSpans.push(this.resourceSpans(this.length(r.len), 2));
      else this.skipField(ExportTraceServiceRequestSchema, r.len, 1);
    }
    return resourceSpans;
  }

  private resourceSpans(end: number, depth: number): OtlpExport[number] {
    const attributes: Attributes = new Map();
    const scopeSpans: OtlpExport[number]["scopeSpans"] = [];
    let resource = false;
    while (this.r.pos < end) {
      this.tag(end);
      if (this.fieldNo === 1 && this.wireType === delimitedType && !resource) {
        resource = true;
        const resourceEnd = this.length(end);
        while (this.r.pos < resourceEnd) {
          this.tag(resourceEnd);
          if (this.fieldNo === 1 && this.wireType === delimitedType) this.keyValue(this.length(resourceEnd), depth + 2, attributes);
          else this.skipField(ResourceSchema, resourceEnd, depth + 1);
        }
      } else if (this.fieldNo === 2 && this.wireType === delimitedType) scopeSpans.push(this.scopeSpans(this.length(end), depth + 1));
      else if (this.fieldNo === 1) throw leave;
      else this.skipField(ResourceSpansSchema, end, depth);
    }
    return { attributes, scopeSpans };
  }

  private scopeSpans(end: number, depth: number): OtlpExport[number]["scopeSpans"][number] {
    let scope = "";
    let scoped = false;
    const spans: OtlpSpan[] = [];
    while (this.r.pos < end) {
      this.tag(end);
      if (this.fieldNo === 1 && this.wireType === delimitedType && !scoped) {
        scoped = true;
        const scopeEnd = this.length(end);
        while (this.r.pos < scopeEnd) {
          this.tag(scopeEnd);
          if (this.fieldNo === 1 && this.wireType === delimitedType) scope = this.text(scopeEnd);
          else this.skipField(InstrumentationScopeSchema, scopeEnd, depth + 1);
        }
      } else if (this.fieldNo === 2 && this.wireType === delimitedType) spans.push(this.span(this.length(end), depth + 1));
      else if (this.fieldNo === 1) throw leave;
      else this.skipField(ScopeSpansSchema, end, depth);
    }
    return { scope, spans };
  }

  private span(end: number, depth: number): OtlpSpan {
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
    while (this.r.pos < end) {
      this.tag(end);
      const { fieldNo, wireType } = this;
      if (wireType === delimitedType && fieldNo === 1) span.traceId = this.hex(end);
      else if (wireType === delimitedType && fieldNo === 2) span.spanId = this.hex(end);
      else if (wireType === delimitedType && fieldNo === 4) span.parentSpanId = this.hex(end);
      else if (wireType === bit64Type && fieldNo === 7) span.startTimeUnixNano = this.fixed64(end);
      else if (wireType === bit64Type && fieldNo === 8) span.endTimeUnixNano = this.fixed64(end);
      else if (wireType === delimitedType && fieldNo === 9) this.keyValue(this.length(end), depth + 1, span.attributes);
      else if (wireType === delimitedType && fieldNo === 11) span.events.push(this.event(this.length(end), depth + 1));
      else if (wireType === delimitedType && fieldNo === 15 && span.status === undefined)
        span.status = this.status(this.length(end), depth + 1);
      else if (fieldNo === 15) throw leave;
      else this.skipField(SpanSchema, end, depth);
    }
    return span;
  }

  private event(end: number, depth: number): OtlpSpan["events"][number] {
    const event = { name: "", attributes: new Map() as Attributes };
    while (this.r.pos < end) {
      this.tag(end);
      if (this.fieldNo === 2 && this.wireType === delimitedType) event.name = this.text(end);
      else if (this.fieldNo === 3 && this.wireType === delimitedType) this.keyValue(this.length(end), depth + 1, event.attributes);
      else this.skipField(Span_EventSchema, end, depth);
    }
    return event;
  }

  private status(end: number, depth: number): NonNullable<OtlpSpan["status"]> {
    const status = { code: 0, message: "" };
    while (this.r.pos < end) {
      this.tag(end);
      if (this.fieldNo === 2 && this.wireType === delimitedType) status.message = this.text(end);
      else if (this.fieldNo === 3 && this.wireType === varintType)
        status.code = this.within(end, this.r.int32()); // an open enum
      else this.skipField(StatusSchema, end, depth);
    }
    return status;
  }

  /** A KeyValue into `into`, as protobuf-es and attributesOf together would put it: only when it has a value. */
  private keyValue(end: number, depth: number, into: Attributes): void {
    if (depth > maxDepth) throw leave;
    let key = "";
    let value: AttributeValue | undefined;
    while (this.r.pos < end) {
      this.tag(end);
      if (this.fieldNo === 1 && this.wireType === delimitedType) key = this.text(end);
      else if (this.fieldNo === 2 && this.wireType === delimitedType && value === undefined)
        value = this.anyValue(this.length(end), depth + 1);
      else if (this.fieldNo === 2)
        throw leave; // a second value would be merged into the first
      else this.skipField(KeyValueSchema, end, depth);
    }
    if (value !== undefined) into.set(key, value);
  }

  private anyValue(end: number, depth: number): AttributeValue {
    const { r } = this;
    let value: AttributeValue = { case: undefined };
    let set = false;
    while (r.pos < end) {
      this.tag(end);
      const { fieldNo, wireType } = this;
      if (valueCases.has(fieldNo)) {
        // More than one of the oneof is rare and merges in ways best left to protobuf-es.
        if (set) throw leave;
        set = true;
      }
      if (fieldNo === 1 && wireType === delimitedType) value = { case: "stringValue", value: this.text(end) };
      else if (fieldNo === 2 && wireType === varintType) value = { case: "boolValue", value: this.within(end, r.bool()) };
      else if (fieldNo === 3 && wireType === varintType) value = { case: "intValue", value: this.within(end, r.int64() as bigint) };
      else if (fieldNo === 4 && wireType === bit64Type) value = { case: "doubleValue", value: this.within(end, r.double()) };
      else {
        this.skipField(AnyValueSchema, end, depth);
        value = valueCases.get(fieldNo) ?? value;
      }
    }
    return value;
  }

  /** Checks a field this reader does not keep, as its schema says protobuf-es reads it; skips an unknown one. */
  private skipField(desc: DescMessage, end: number, depth: number): void {
    const field = fieldsOf(desc).get(this.fieldNo);
    if (field === undefined) this.skipUnknown(end);
    else if (field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message")) {
      if (this.wireType !== delimitedType) throw leave;
      this.skipMessage(field.message, this.length(end), depth + 1);
    } else if (field.fieldKind === "scalar") this.skipScalar(field.scalar, end);
    else if (field.fieldKind === "enum") this.skipScalar(ScalarType.INT32, end);
    // A packed list (length-delimited numbers) is left to protobuf-es by skipScalar's wire type check.
    else if (field.fieldKind === "list") this.skipScalar(field.listKind === "enum" ? ScalarType.INT32 : field.scalar, end);
    else throw leave;
  }

  private skipMessage(desc: DescMessage, end: number, depth: number): void {
    if (depth > maxDepth) throw leave;
    while (this.r.pos < end) {
      this.tag(end);
      this.skipField(desc, end, depth);
    }
  }

  private skipScalar(type: ScalarType, end: number): void {
    const expected =
      type === ScalarType.STRING || type === ScalarType.BYTES
        ? delimitedType
        : type === ScalarType.DOUBLE || type === ScalarType.FIXED64 || type === ScalarType.SFIXED64
          ? bit64Type
          : type === ScalarType.FLOAT || type === ScalarType.FIXED32 || type === ScalarType.SFIXED32
            ? bit32Type
            : varintType;
    if (this.wireType !== expected) throw leave;
    // Read as protobuf-es reads them, so that what it refuses (invalid UTF-8, a varint over 10 bytes) is left to it.
    if (type === ScalarType.STRING) this.text(end);
    else if (expected === varintType) this.within(end, this.r.uint64());
    else this.skipUnknown(end);
  }

  private skipUnknown(end: number): void {
    // Groups, and wire types protobuf-es refuses, are left to it.
    if (this.wireType !== varintType && this.wireType !== bit64Type && this.wireType !== delimitedType && this.wireType !== bit32Type)
      throw leave;
    this.r.skip(this.wireType, this.fieldNo);
    this.within(end, undefined);
  }

  /** A tag of at most 4 bytes (field numbers up to 2^25), with a wire type protobuf-es knows. */
  private tag(end: number): void {
    const start = this.r.pos;
    const tag = this.within(end, this.r.uint32());
    if (this.r.pos - start > 4) throw leave;
    this.fieldNo = tag >>> 3;
    this.wireType = tag & 7;
    if (this.fieldNo === 0 || this.wireType > 5) throw leave;
  }

  /** A length prefix: the end of what it measures, which must lie within `end`. */
  private length(end: number): number {
    const length = this.r.uint32();
    const stop = this.r.pos + length;
    if (stop > end) throw leave;
    return stop;
  }

  /** A string, which must be valid UTF-8 (protobuf-es checks proto3 strings). */
  private text(end: number): string {
    return this.within(end, this.r.string(true));
  }

  private hex(end: number): string {
    return this.within(end, this.r.bytes() as Buffer).toString("hex");
  }

  private fixed64(end: number): bigint {
    return this.within(end, this.r.fixed64() as bigint);
  }

  /** `value`, read by the reader, which must not have read past `end`. */
  private within<T>(end: number, value: T): T {
    if (this.r.pos > end) throw leave;
    return value;
  }
}

/** AnyValue's oneof by field number; the values the mapping does not read are these objects, shared. */
const valueCases = new Map(
  AnyValueSchema.fields.filter((f) => f.oneof !== undefined).map((f) => [f.number, { case: f.localName } as AttributeValue]),
);

const fieldTables = new Map<DescMessage, Map<number, DescField>>();

function fieldsOf(desc: DescMessage): Map<number, DescField> {
  let table = fieldTables.get(desc);
  if (table === undefined) fieldTables.set(desc, (table = new Map(desc.fields.map((f) => [f.number, f]))));
  return table;
}
