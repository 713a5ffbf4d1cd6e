import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  type ExportTraceServiceRequest,
  ExportTraceServiceRequestSchema,
} from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import type { AnyValueSchema, KeyValueSchema } from "../../gen/opentelemetry/proto/common/v1/common_pb.js";
import { type Span, SpanSchema } from "../../gen/opentelemetry/proto/trace/v1/trace_pb.js";
import { exportOfMessage, type OtlpExport } from "../../src/otlp/otlp-export.js";
import { readExport } from "../../src/otlp/otlp-protobuf.js";
import { type SeededRandom as Random, seededRandom as random } from "../support/seeded-random.js";

// The fast reader of OTLP protobuf (src/otlp/otlp-protobuf.ts) against protobuf-es: on every
// input it reads, protobuf-es must read the same Export; what it leaves, protobuf-es decides.

const texts = [
  "",
  "chat",
  "gpt-4o-mini",
  "gen_ai.usage.input_tokens",
  "héllo wörld",
  "日本語のテキスト",
  "\uFEFFbom first",
  "emoji 🚀 text",
  "x".repeat(40),
  "a\u0000b",
];
const keys = [
  "gen_ai.operation.name",
  "gen_ai.provider.name",
  "gen_ai.system",
  "gen_ai.request.model",
  "gen_ai.response.model",
  "gen_ai.response.id",
  "gen_ai.usage.input_tokens",
  "gen_ai.usage.output_tokens",
  "gen_ai.usage.cache_read.input_tokens",
  "gen_ai.response.time_to_first_chunk",
  "error.type",
  "user.id",
  "session.id",
  "service.name",
  "exception.message",
  "custom.attribute",
];

function anyValue(r: Random, depth: number): MessageInitShape<typeof AnyValueSchema>["value"] {
  switch (r.int(depth > 2 ? 6 : 9)) {
    case 0:
    case 1:
      return { case: "stringValue", value: r.pick(texts) };
    case 2:
      return { case: "boolValue", value: r.next() < 0.5 };
    case 3:
      return { case: "intValue", value: r.pick([0n, 1n, 1234n, -5n, 2n ** 31n, -(2n ** 63n), 2n ** 63n - 1n, BigInt(r.int(1e9))]) };
    case 4:
      return { case: "doubleValue", value: r.pick([0, 0.5, -1.25, 1e300, Number.NaN, Number.POSITIVE_INFINITY, 42]) };
    case 5:
      return { case: undefined };
    case 6:
      return { case: "arrayValue", value: { values: Array.from({ length: r.int(3) }, () => ({ value: anyValue(r, depth + 1) })) } };
    case 7:
      return { case: "kvlistValue", value: { values: keyValues(r, depth + 1) } };
    default:
      return { case: "bytesValue", value: r.bytes(r.int(5)) };
  }
}

function keyValues(r: Random, depth = 0): MessageInitShape<typeof KeyValueSchema>[] {
  return Array.from({ length: r.int(6) }, () => ({
    key: r.pick(keys),
    keyStrindex: r.next() < 0.05 ? 1 + r.int(3) : 0,
    // Sometimes no value at all: such a key is left out.
    ...(r.next() < 0.1 ? {} : { value: { value: anyValue(r, depth) } }),
  }));
}

/** Unknown fields, as a newer schema or another producer might send them. */
function unknownFields(r: Random) {
  if (r.next() < 0.8) return {};
  return {
    $unknown: [
      { no: 900 + r.int(50), wireType: 0, data: Uint8Array.of(r.int(128)) },
      { no: 1000, wireType: 2, data: Uint8Array.of(3, 1, 2, 3) },
      { no: 1001, wireType: 5, data: r.bytes(4) },
      { no: 1002, wireType: 1, data: r.bytes(8) },
    ].slice(0, 1 + r.int(4)),
  };
}

function span(r: Random): Span {
  const start = BigInt(Date.now()) * 1_000_000n - BigInt(r.int(1e12));
  return create(SpanSchema, {
    traceId: r.bytes(r.pick([16, 16, 16, 0, 3])),
    spanId: r.bytes(r.pick([8, 8, 8, 0])),
    traceState: r.pick(["", "vendor=1"]),
    parentSpanId: r.bytes(r.pick([0, 8])),
    flags: r.int(512),
    name: r.pick(texts),
    kind: r.int(6),
    startTimeUnixNano: start,
    endTimeUnixNano: r.next() < 0.1 ? 0n : start + BigInt(r.int(1e10)),
    attributes: keyValues(r),
    droppedAttributesCount: r.int(3),
    events: Array.from({ length: r.int(3) }, () => ({
      timeUnixNano: start,
      name: r.pick(["exception", "gen_ai.content.completion.chunk", ""]),
      attributes: keyValues(r),
      droppedAttributesCount: 0,
    })),
    droppedEventsCount: 0,
    links: Array.from({ length: r.int(2) }, () => ({
      traceId: r.bytes(16),
      spanId: r.bytes(8),
      traceState: "",
      attributes: keyValues(r),
      droppedAttributesCount: 0,
      flags: 0,
    })),
    droppedLinksCount: 0,
    ...(r.next() < 0.5 ? {} : { status: { message: r.pick(texts), code: r.pick([0, 1, 2, 7, -3]) } }),
    ...unknownFields(r),
  });
}

function exportRequest(r: Random): ExportTraceServiceRequest {
  return create(ExportTraceServiceRequestSchema, {
    resourceSpans: Array.from({ length: 1 + r.int(2) }, () => ({
      ...(r.next() < 0.1 ? {} : { resource: { attributes: keyValues(r), droppedAttributesCount: r.int(2), ...unknownFields(r) } }),
      scopeSpans: Array.from({ length: r.int(3) }, () => ({
        ...(r.next() < 0.1
          ? {}
          : {
              scope: {
                name: r.pick(["opentelemetry.instrumentation.openai.v1", "com.anthropic.sdk.python", ""]),
                version: "1.0",
                attributes: keyValues(r),
              },
            }),
        spans: Array.from({ length: r.int(4) }, () => span(r)),
        schemaUrl: r.pick(["", "https://opentelemetry.io/schemas/1.26.0"]),
      })),
      schemaUrl: "",
      ...unknownFields(r),
    })),
  });
}

/** What protobuf-es makes of the bytes, in the reader's terms; "refused" when it throws. */
function byProtobufEs(bytes: Uint8Array): OtlpExport | "refused" {
  try {
    return exportOfMessage(fromBinary(ExportTraceServiceRequestSchema, bytes));
  } catch {
    return "refused";
  }
}

function mutate(r: Random, bytes: Uint8Array): Uint8Array {
  const out = Array.from(bytes);
  const at = r.int(Math.max(1, out.length));
  switch (r.int(6)) {
    case 0:
      out[at] = r.int(256);
      break;
    case 1:
      out[at] = (out[at] ?? 0) ^ (1 << r.int(8));
      break;
    case 2:
      out.length = at;
      break;
    case 3:
      out.splice(at, 0, r.int(256));
      break;
    case 4:
      out.splice(at, 1);
      break;
    default:
      out.splice(at, 0, r.pick([0x80, 0xff, 0x0b, 0x0c, 0x0f]), r.pick([0x80, 0x01, 0x7f]));
  }
  return Uint8Array.from(out);
}

describe("the fast OTLP protobuf reader agrees with protobuf-es", () => {
  it("reads every generated Export, valid as protobuf-es encodes it, as protobuf-es does", () => {
    const r = random(44);
    for (let i = 0; i < 1500; i++) {
      const bytes = toBinary(ExportTraceServiceRequestSchema, exportRequest(r));
      const fast = readExport(bytes);
      expect(fast, `generated Export ${i}`).toBeDefined();
      expect(fast).toEqual(byProtobufEs(bytes));
    }
  });

  it("on mutated Exports: whatever it reads, protobuf-es reads the same; the rest it leaves to protobuf-es", () => {
    const r = random(4444);
    let read = 0;
    let left = 0;
    for (let i = 0; i < 400; i++) {
      const original = toBinary(ExportTraceServiceRequestSchema, exportRequest(r));
      for (let m = 0; m < 25; m++) {
        const bytes = mutate(r, original);
        const fast = readExport(bytes);
        if (fast === undefined) {
          left += 1;
          continue;
        }
        read += 1;
        expect(byProtobufEs(bytes), `Export ${i}, mutation ${m}: ${Buffer.from(bytes).toString("hex")}`).toEqual(fast);
      }
    }
    // Both outcomes must be common, or this test would not be testing much.
    expect(read).toBeGreaterThan(1000);
    expect(left).toBeGreaterThan(1000);
  });

  it("leaves to protobuf-es what it does not take, and protobuf-es decides as before", () => {
    const cases: Record<string, number[]> = {
      // resourceSpans (1) holding scopeSpans (2) holding a span (2) whose name (5) is the byte 0xff
      "invalid UTF-8": [0x0a, 0x07, 0x12, 0x05, 0x12, 0x03, 0x2a, 0x01, 0xff],
      "a group": [0x0b, 0x0c],
      "a tag in 6 bytes": [0x8a, 0x80, 0x80, 0x80, 0x80, 0x00, 0x00],
      "a length past the end": [0x0a, 0x05, 0x12],
      "wire type 7": [0x0f],
      "field number 0": [0x02, 0x00],
      "a span field of the wrong wire type": [0x0a, 0x06, 0x12, 0x04, 0x12, 0x02, 0x08, 0x01],
      "an unterminated varint": [0x08, 0x80],
    };
    for (const [name, bytes] of Object.entries(cases)) {
      const body = Uint8Array.from(bytes);
      expect(readExport(body), name).toBeUndefined();
    }
    // protobuf-es refuses these too (the 400 of test/otlp/otlp-http.test.ts).
    for (const name of [
      "invalid UTF-8",
      "a group",
      "a tag in 6 bytes",
      "a length past the end",
      "wire type 7",
      "field number 0",
      "an unterminated varint",
    ]) {
      expect(byProtobufEs(Uint8Array.from(cases[name]!)), name).toBe("refused");
    }
  });

  it("leaves repeated singular messages (merged by protobuf-es) to protobuf-es, which merges them", () => {
    // A span (in scopeSpans in resourceSpans) whose status comes twice: message "a", then code 2.
    const status1 = [0x7a, 0x03, 0x12, 0x01, 0x61];
    const status2 = [0x7a, 0x02, 0x18, 0x02];
    const spanBytes = [...status1, ...status2];
    const scopeSpans = [0x12, spanBytes.length, ...spanBytes];
    const resourceSpans = [0x12, scopeSpans.length, ...scopeSpans];
    const body = Uint8Array.from([0x0a, resourceSpans.length, ...resourceSpans]);
    expect(readExport(body)).toBeUndefined();
    const merged = byProtobufEs(body);
    expect(merged !== "refused" && merged[0]!.scopeSpans[0]!.spans[0]!.status).toEqual({ code: 2, message: "a" });
  });
});
