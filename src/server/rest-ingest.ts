import { isUtf8 } from "node:buffer";
import type { JsonObject } from "@bufbuild/protobuf";
import type { Admission, IngestPipeline } from "../ingest/ingest-pipeline.js";
import type { HeaderFields } from "../limits/rate-limit-headers.js";
import { bodyInvalid, payloadTooLarge, unsupportedMediaType } from "../ingest/ingest-errors.js";
import { traceFromJson } from "../ingest/trace-json.js";
import type { Logger } from "../log/logger.js";
import type { OtlpExport } from "../otlp/otlp-export.js";
import type { OtlpIngest } from "../otlp/otlp-ingest.js";
import { exportFromOtlpJson } from "../otlp/otlp-json.js";
import { clientAddress } from "./client-address.js";
import { decodedBody } from "./content-encoding.js";
import { sendJson, sendJsonText } from "./json-response.js";
import type { NodeRequest, NodeResponse } from "./node-types.js";
import { exportFromProtobuf, isOtlpProtobuf, type OtlpEncoding, sendOtlpExport, sendOtlpRefusal, startsAsOtlpJson } from "./otlp-http.js";
import { BodyTooLargeError, ClientAbortedError, readBody } from "./read-body.js";
import { restRefusal } from "./rest-refusal.js";

export interface RestIngestOptions {
  maxBodyBytes: number;
  /** Largest OTLP Export (OTLP_MAX_BODY_BYTES); absent: maxBodyBytes. */
  otlpMaxBodyBytes?: number;
  trustProxy: boolean;
  logger: Logger;
  /** Reads a protobuf OTLP Export (exportDecoder). */
  readOtlp: (body: Uint8Array) => OtlpExport;
}

/**
 * `POST /v1/traces`, a thin edge over the ingest pipeline for two protocols on one path:
 * - the spec's JSON trace, decoded into the contract's Trace and run through the same pipeline as
 *   TraceService.Ingest, its refusals mapped to the spec's statuses and bodies;
 * - an OTLP/HTTP Export (`application/x-protobuf`, or JSON whose top level has `resourceSpans`),
 *   answered as OTLP/HTTP answers, in the request's encoding.
 * Either may be gzip-compressed.
 */
export function restIngest(pipeline: IngestPipeline, otlp: OtlpIngest, options: RestIngestOptions) {
  const otlpMaxBodyBytes = options.otlpMaxBodyBytes ?? options.maxBodyBytes;
  /** `common`: the headers every response carries (request id, ...), written with the response's own in one writeHead. */
  return async (req: NodeRequest, res: NodeResponse, common: HeaderFields): Promise<void> => {
    let admission: Admission | undefined;
    let accepting = false;
    const address = clientAddress(req.headers, req.socket?.remoteAddress, options.trustProxy);
    const contentType = req.headers["content-type"];
    // Known from the header for protobuf; for JSON only once the body shows `resourceSpans`.
    let otlpEncoding: OtlpEncoding | undefined = isOtlpProtobuf(contentType) ? "protobuf" : undefined;
    try {
      // An Export's traces are counted against the quota once they are known.
      admission = await pipeline.admit(req.headers.authorization ?? null, address, otlpEncoding === undefined);
      // An Export has its own limit; a JSON body gets it once its first bytes show an OTLP Export.
      const encoding = req.headers["content-encoding"];
      const mayBeOtlp = (head: Buffer) => startsAsOtlpJson(head, encoding);
      let raw: Buffer;
      try {
        raw =
          otlpEncoding === "protobuf"
            ? await readBody(req, otlpMaxBodyBytes)
            : await readBody(req, options.maxBodyBytes, { limit: otlpMaxBodyBytes, allowed: mayBeOtlp });
      } catch (error) {
        if (!(error instanceof BodyTooLargeError)) throw error;
        // The rest of the body is never read: the connection cannot be reused.
        if ("shouldKeepAlive" in res) res.shouldKeepAlive = false;
        throw payloadTooLarge(error.limit);
      }
      // D1 order: the body's size, then its type, then its content (and gzip is content).
      if (otlpEncoding !== "protobuf" && !isJson(contentType)) throw unsupportedMediaType(contentType);
      if (encoding !== undefined) {
        const limit = otlpEncoding === "protobuf" || mayBeOtlp(raw) ? otlpMaxBodyBytes : options.maxBodyBytes;
        raw = await decodedBody(raw, encoding, limit);
      }
      if (otlpEncoding === "protobuf") {
        const request = exportFromProtobuf(raw, options.readOtlp);
        accepting = true;
        sendOtlpExport(res, otlpEncoding, await otlp(admission, request, address), Object.assign({}, common, admission.headers));
        return;
      }
      const body = parseJsonObject(raw);
      if (Object.hasOwn(body, "resourceSpans")) {
        otlpEncoding = "json";
        const request = exportFromOtlpJson(body as JsonObject);
        accepting = true;
        sendOtlpExport(res, otlpEncoding, await otlp(admission, request, address), Object.assign({}, common, admission.headers));
        return;
      }
      const { trace, problems } = traceFromJson(body);
      accepting = true;
      const quotaHeaders = await pipeline.accept(admission, {
        trace,
        decodeProblems: problems,
        idempotencyKey: header(req.headers["idempotency-key"]),
        clientAddress: address,
      });
      sendJsonText(res, 202, accepted, Object.assign({}, common, admission.headers, quotaHeaders));
    } catch (error) {
      if (admission && !accepting) await pipeline.abandon(admission);
      if (error instanceof ClientAbortedError) return;
      const refusal = restRefusal(error);
      if (refusal.status === 500) options.logger.error({ err: error }, "ingest failed");
      for (const [name, value] of Object.entries(admission?.headers ?? {})) refusal.headers.set(name, value);
      const headers = Object.assign({}, common, Object.fromEntries(refusal.headers));
      if (otlpEncoding) sendOtlpRefusal(res, otlpEncoding, refusal, error, headers);
      else sendJson(res, refusal.status, refusal.body, headers);
    }
  };
}

/*
 * Headers are merged with Object.assign, not `{ ...a, ...b }`: on Node 20 a spread after the
 * first one goes through a slow runtime path, about 2 us per extra spread of a few headers.
 */

/** Every accepted trace's answer, serialized once. */
const accepted = JSON.stringify({ status: "ok" });

/** D8: application/json, parameters such as charset allowed. */
function isJson(contentType: string | undefined): boolean {
  if (contentType === "application/json") return true; // what clients send, without the string work below
  return contentType !== undefined && contentType.split(";")[0]!.trim().toLowerCase() === "application/json";
}

function parseJsonObject(raw: Buffer): Record<string, unknown> {
  if (raw.length === 0) throw bodyInvalid("request body is empty");
  if (!isUtf8(raw)) throw bodyInvalid("request body is not valid UTF-8");
  // A byte order mark is ignored, as RFC 8259 allows.
  const text = raw.toString("utf8", hasBom(raw) ? 3 : 0);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw bodyInvalid(`request body is not valid JSON (${(error as Error).message})`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw bodyInvalid("request body must be a JSON object");
  }
  return value as Record<string, unknown>;
}

function hasBom(raw: Buffer): boolean {
  return raw.length >= 3 && raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf;
}

function header(value: string | string[] | undefined): string | null {
  return value === undefined ? null : Array.isArray(value) ? value.join(",") : value;
}
