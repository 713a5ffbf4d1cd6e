import { constants as zlibConstants, gunzipSync } from "node:zlib";
import { create, type DescMessage, type MessageShape, toBinary, toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ExportTraceServiceResponseSchema } from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { bodyInvalid } from "../ingest/ingest-errors.js";
import type { OtlpExport } from "../otlp/otlp-export.js";
import type { OtlpExportResult } from "../otlp/otlp-ingest.js";
import { type ResponseHeaders, sendPayload } from "./json-response.js";
import type { NodeResponse } from "./node-types.js";
import type { RestRefusal } from "./rest-refusal.js";

/** The two OTLP/HTTP encodings; answers go back in the request's. */
export type OtlpEncoding = "protobuf" | "json";

const contentTypes: Record<OtlpEncoding, string> = { protobuf: "application/x-protobuf", json: "application/json" };

/** OTLP/HTTP's binary encoding: `application/x-protobuf` (parameters allowed). */
export function isOtlpProtobuf(contentType: string | undefined): boolean {
  return contentType !== undefined && contentType.split(";")[0]!.trim().toLowerCase() === "application/x-protobuf";
}

/** How every OTLP JSON exporter's body begins (the JavaScript SDK's, the Collector's). */
const otlpJsonStart = /^(\uFEFF)?\s*\{\s*"resourceSpans"\s*:/;

/**
 * Whether a JSON body (or its first bytes), gzipped or not, begins as an OTLP Export: such a body
 * may grow to OTLP_MAX_BODY_BYTES, while the spec's trace keeps MAX_BODY_BYTES. Of a gzipped body
 * only the first KiB is inflated, which bounds the work at about a megabyte whatever it holds.
 */
export function startsAsOtlpJson(head: Buffer, contentEncoding: string | undefined): boolean {
  const encoding = contentEncoding?.trim().toLowerCase();
  let text = head;
  if (encoding === "gzip" || encoding === "x-gzip") {
    try {
      text = gunzipSync(head.subarray(0, 1024), { finishFlush: zlibConstants.Z_SYNC_FLUSH });
    } catch {
      return false; // not gzip: decodedBody says so
    }
  } else if (encoding !== undefined && encoding !== "" && encoding !== "identity") return false;
  return otlpJsonStart.test(text.toString("utf8", 0, Math.min(text.length, 256)));
}

/**
 * An ExportTraceServiceRequest in protobuf; anything that does not decode as one is the client's
 * fault (400). `decode` is exportDecoder's (otlp-protobuf.ts).
 */
export function exportFromProtobuf(body: Buffer, decode: (body: Uint8Array) => OtlpExport): OtlpExport {
  try {
    return decode(body);
  } catch (error) {
    throw bodyInvalid(`request body is not a valid protobuf ExportTraceServiceRequest (${(error as Error).message})`);
  }
}

/** 200 with the ExportTraceServiceResponse (partial_success when spans were rejected). */
export function sendOtlpExport(res: NodeResponse, encoding: OtlpEncoding, result: OtlpExportResult, headers: Record<string, string>): void {
  send(res, 200, encoding, ExportTraceServiceResponseSchema, result.response, Object.assign({}, headers, result.headers));
}

/**
 * A refusal as OTLP/HTTP answers it: the status the spec's REST edge uses (401, 413, 415, 400,
 * 429 and 503 with Retry-After, 500), with a google.rpc.Status body carrying the refusal's code and text.
 */
export function sendOtlpRefusal(
  res: NodeResponse,
  encoding: OtlpEncoding,
  refusal: RestRefusal,
  error: unknown,
  headers: ResponseHeaders,
): void {
  const status =
    error instanceof ConnectError && refusal.status !== 500
      ? create(StatusSchema, { code: error.code, message: error.rawMessage })
      : create(StatusSchema, { code: Code.Internal, message: "Internal error" });
  send(res, refusal.status, encoding, StatusSchema, status, headers);
}

function send<Desc extends DescMessage>(
  res: NodeResponse,
  status: number,
  encoding: OtlpEncoding,
  schema: Desc,
  message: MessageShape<Desc>,
  headers: ResponseHeaders,
): void {
  if (res.headersSent || res.destroyed) return;
  const payload = encoding === "protobuf" ? toBinary(schema, message) : Buffer.from(toJsonString(schema, message));
  sendPayload(res, status, contentTypes[encoding], payload, headers);
}
