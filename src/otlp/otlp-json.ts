import { fromJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import {
  type ExportTraceServiceRequest,
  ExportTraceServiceRequestSchema,
} from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import { bodyInvalid, validationFailed } from "../ingest/ingest-errors.js";
import { exportOfMessage, type OtlpExport } from "./otlp-export.js";

const hex = /^(?:[0-9a-fA-F]{2})*$/;

/**
 * An Export in the OTLP JSON encoding. It is proto3 JSON except that trace and span ids are hex,
 * not base64: they are turned into base64 in place, then the generated schema reads the rest
 * (lowerCamelCase names, enum integers, 64-bit integers as strings or numbers). Unknown fields
 * are ignored, as the OTLP specification asks of receivers.
 */
export function exportFromOtlpJson(body: JsonObject): OtlpExport {
  const resourceSpans = body.resourceSpans;
  if (Array.isArray(resourceSpans)) {
    resourceSpans.forEach((rs, r) => {
      const scopeSpans = isObject(rs) ? rs.scopeSpans : undefined;
      if (!Array.isArray(scopeSpans)) return;
      scopeSpans.forEach((ss, s) => {
        const spans = isObject(ss) ? ss.spans : undefined;
        if (!Array.isArray(spans)) return;
        spans.forEach((span, i) => {
          if (!isObject(span)) return;
          const at = `resourceSpans[${r}].scopeSpans[${s}].spans[${i}]`;
          idsToBase64(span, at);
          if (!Array.isArray(span.links)) return;
          span.links.forEach((link, l) => {
            if (isObject(link)) idsToBase64(link, `${at}.links[${l}]`);
          });
        });
      });
    });
  }
  let request: ExportTraceServiceRequest;
  try {
    request = fromJson(ExportTraceServiceRequestSchema, body, { ignoreUnknownFields: true });
  } catch (error) {
    throw bodyInvalid(`request body is not a valid OTLP JSON ExportTraceServiceRequest (${(error as Error).message})`);
  }
  return exportOfMessage(request);
}

function idsToBase64(object: JsonObject, at: string): void {
  for (const name of ["traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"]) {
    const value = object[name];
    if (value === undefined || value === null) continue;
    if (typeof value !== "string" || !hex.test(value))
      throw validationFailed([{ field: `${at}.${name}`, problem: "must be a hex string" }]);
    object[name] = Buffer.from(value, "hex").toString("base64");
  }
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
