import { randomBytes } from "node:crypto";
import { create, fromBinary, toBinary, toJson } from "@bufbuild/protobuf";
import {
  type ExportTraceServiceRequest,
  ExportTraceServiceRequestSchema,
  type ExportTraceServiceResponse,
  ExportTraceServiceResponseSchema,
} from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import { type KeyValue, KeyValueSchema } from "../../gen/opentelemetry/proto/common/v1/common_pb.js";
import { type Span, SpanSchema, Status_StatusCode } from "../../gen/opentelemetry/proto/trace/v1/trace_pb.js";
import { type Status, StatusSchema } from "../../gen/google/rpc/status_pb.js";
import type { StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import type { Store } from "../../src/store/store.js";

export type AttributeValue = string | number | boolean | { double: number };

/** OTLP attributes from a plain object: integers as intValue, { double } as doubleValue. */
export function attributes(values: Record<string, AttributeValue>): KeyValue[] {
  return Object.entries(values).map(([key, v]) =>
    create(KeyValueSchema, {
      key,
      value: {
        value:
          typeof v === "string"
            ? { case: "stringValue", value: v }
            : typeof v === "boolean"
              ? { case: "boolValue", value: v }
              : typeof v === "number"
                ? Number.isInteger(v)
                  ? { case: "intValue", value: BigInt(v) }
                  : { case: "doubleValue", value: v }
                : { case: "doubleValue", value: v.double },
      },
    }),
  );
}

export const newTraceId = () => randomBytes(16);
export const newSpanId = () => randomBytes(8);
export const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

export interface SpanOptions {
  name?: string;
  traceId?: Uint8Array;
  spanId?: Uint8Array;
  parentSpanId?: Uint8Array;
  /** Start, in ms since the epoch; the span lasts `durationMs`. */
  startMs?: number;
  durationMs?: number;
  status?: { code: Status_StatusCode; message?: string };
  attributes?: Record<string, AttributeValue>;
  exceptionMessage?: string;
}

/** A chat span as OpenTelemetry GenAI instrumentations make it, any attribute overridable. */
export function genAiSpan(options: SpanOptions = {}): Span {
  const start = BigInt(options.startMs ?? Date.now() - 1000) * 1_000_000n;
  return create(SpanSchema, {
    name: options.name ?? "chat gpt-4o-mini",
    kind: 3,
    traceId: options.traceId ?? newTraceId(),
    spanId: options.spanId ?? newSpanId(),
    parentSpanId: options.parentSpanId ?? new Uint8Array(),
    startTimeUnixNano: start,
    endTimeUnixNano: start + BigInt(Math.round((options.durationMs ?? 842) * 1_000_000)),
    attributes: attributes(
      options.attributes ?? {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.usage.input_tokens": 1200,
        "gen_ai.usage.output_tokens": 350,
      },
    ),
    events: options.exceptionMessage
      ? [{ name: "exception", timeUnixNano: start, attributes: attributes({ "exception.message": options.exceptionMessage }) }]
      : [],
    ...(options.status ? { status: { code: options.status.code, message: options.status.message ?? "" } } : {}),
  });
}

/** An Export of spans from one resource (service.name `checkout` unless given) and one scope. */
export function exportOf(
  spans: Span[],
  resource: Record<string, AttributeValue> = { "service.name": "checkout" },
  scope = "test.instrumentation",
): ExportTraceServiceRequest {
  return create(ExportTraceServiceRequestSchema, {
    resourceSpans: [{ resource: { attributes: attributes(resource) }, scopeSpans: [{ scope: { name: scope }, spans }] }],
  });
}

/** An Export as OTLP JSON writes it (a Collector's file exporter): ids in hex, where protobuf's JSON writes base64. */
export function otlpJsonText(request: ExportTraceServiceRequest): string {
  return JSON.stringify(toJson(ExportTraceServiceRequestSchema, request)).replace(
    /"(traceId|spanId|parentSpanId)":"([^"]*)"/g,
    (_m, name: string, b64: string) => `"${name}":"${Buffer.from(b64, "base64").toString("hex")}"`,
  );
}

export interface OtlpAnswer {
  status: number;
  headers: Headers;
  /** The ExportTraceServiceResponse of a 200. */
  response?: ExportTraceServiceResponse;
  /** The google.rpc.Status of a refusal. */
  refusal?: Status;
  body: Buffer;
}

/** POSTs an Export as application/x-protobuf and decodes the answer. */
export async function postExport(
  url: string,
  key: string | undefined,
  request: ExportTraceServiceRequest | Uint8Array,
  headers: Record<string, string> = {},
): Promise<OtlpAnswer> {
  const body = request instanceof Uint8Array ? request : toBinary(ExportTraceServiceRequestSchema, request);
  const response = await fetch(`${url}/v1/traces`, {
    method: "POST",
    headers: { "content-type": "application/x-protobuf", ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    body: body as BodyInit,
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  const protobuf = response.headers.get("content-type") === "application/x-protobuf";
  return {
    status: response.status,
    headers: response.headers,
    body: bytes,
    ...(protobuf && response.status === 200 ? { response: fromBinary(ExportTraceServiceResponseSchema, bytes) } : {}),
    ...(protobuf && response.status !== 200 ? { refusal: fromBinary(StatusSchema, bytes) } : {}),
  };
}

/** POSTs raw text as OTLP JSON; the answer's body as parsed JSON. */
export async function postJson(url: string, key: string | undefined, text: string | Uint8Array, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}/v1/traces`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    body: text as BodyInit,
  });
  return { status: response.status, headers: response.headers, json: (await response.json()) as Record<string, unknown> };
}

/** The account's stored traces that came from OTLP, oldest first. */
export async function storedOtlp(store: Store, accountId: string): Promise<StoredTrace[]> {
  const traces: StoredTrace[] = [];
  for await (const trace of store.exportTraces({ accountId })) if (trace.otlpSpanId !== "") traces.push(trace);
  return traces;
}

export { Status_StatusCode };

/**
 * What every store must store once (D44): an Export of a call that started long ago (2001),
 * sent twice (a retry), then a second instrumentation's span of the same call (same response id)
 * starting 800 ms later, in a third Export. Answers the spans and the three statuses.
 */
export async function postLongAgoRetryAndTwin(url: string, key: string): Promise<{ call: Span; twin: Span; statuses: number[] }> {
  const startMs = Date.UTC(2001, 0, 1, 12, 0, 0, 600); // the twin starts in the next second
  const responseId = `chatcmpl-${randomBytes(8).toString("hex")}`;
  const chat = (outputTokens: number) => ({
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "gpt-4o-mini",
    "gen_ai.response.id": responseId,
    "gen_ai.usage.input_tokens": 5,
    "gen_ai.usage.output_tokens": outputTokens,
  });
  const call = genAiSpan({ startMs, attributes: chat(6) });
  const twin = genAiSpan({ startMs: startMs + 800, attributes: chat(7) });
  const statuses: number[] = [];
  for (const request of [exportOf([call]), exportOf([call]), exportOf([twin])]) statuses.push((await postExport(url, key, request)).status);
  return { call, twin, statuses };
}
