import { randomBytes } from "node:crypto";
import { Agent, request } from "node:http";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  ExportTraceServiceRequestSchema,
  ExportTraceServiceResponseSchema,
} from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import { attributes } from "../../test/otlp/otlp-support.js";
import { attributedCardinality } from "./attributed-traffic.js";
import { type LoadResult, type LoadSettings, percentile } from "./load.js";

/**
 * OTLP/HTTP protobuf Exports of `spansPerExport` GenAI chat spans each, from `settings.connections`
 * exporters sending one Export at a time on keep-alive connections (as a BatchSpanProcessor does).
 * Every Export is new: its bytes are a template whose trace and response ids get random bytes and
 * a fresh counter patched in, so nothing is a retry and every span must be stored, and whose spans
 * start and end as it is sent, as an exporter's spans started moments before. Counts as errors
 * every non-200 and every 200 whose response reports rejected spans.
 */
export async function otlpExportLoad(
  url: string,
  key: string,
  settings: LoadSettings,
  spansPerExport: number,
  /** Spans with a user, session, two metadata attributes and an environment, drawn afresh in every Export (exportTemplate). */
  attributed = false,
): Promise<LoadResult & { spansPerSecond: number; exports: number }> {
  const { template, counterOffsets, responseIdOffsets, startOffsets, endOffsets, drawn } = exportTemplate(spansPerExport, attributed);
  const agent = new Agent({ keepAlive: true, maxSockets: settings.connections });
  let counter = 0;
  const next = () => {
    const body = Buffer.from(template);
    counter += 1;
    // Random leading bytes too, as trace and response ids are random: a counter alone would put
    // each id next to the previous Export's in the store's indexes.
    const random = randomBytes(counterOffsets.length * 8);
    for (let i = 0; i < counterOffsets.length; i++) {
      random.copy(body, counterOffsets[i]! - 12, i * 8, i * 8 + 4);
      body.write(random.toString("hex", i * 8 + 4, i * 8 + 8), responseIdOffsets[i]! - 20, "latin1");
    }
    for (const offset of counterOffsets) body.writeUInt32BE(counter, offset);
    const hexCounter = counter.toString(16).padStart(8, "0");
    for (const offset of responseIdOffsets) body.write(hexCounter, offset, "latin1");
    const end = BigInt(Date.now()) * 1_000_000n;
    for (const offset of startOffsets) body.writeBigUInt64LE(end - spanNanos, offset);
    for (const offset of endOffsets) body.writeBigUInt64LE(end, offset);
    for (const { offsets, digits, values } of drawn)
      for (const offset of offsets) body.write(String(Math.floor(Math.random() * values)).padStart(digits, "0"), offset, "latin1");
    return body;
  };

  const run = async (seconds: number) => {
    const latencies: number[] = [];
    let errors = 0;
    const until = performance.now() + seconds * 1000;
    const exporter = async () => {
      while (performance.now() < until) {
        const started = performance.now();
        const { status, body } = await post(url, key, next(), agent);
        latencies.push(performance.now() - started);
        if (status !== 200 || fromBinary(ExportTraceServiceResponseSchema, body).partialSuccess) errors += 1;
      }
    };
    const began = performance.now();
    await Promise.all(Array.from({ length: settings.connections }, exporter));
    const elapsed = (performance.now() - began) / 1000;
    latencies.sort((a, b) => a - b);
    return { exports: latencies.length, requestsPerSecond: latencies.length / elapsed, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), errors };
  };
  if (settings.warmupSeconds > 0) await run(settings.warmupSeconds);
  const result = await run(settings.seconds);
  agent.destroy();
  return { ...result, spansPerSecond: result.requestsPerSecond * spansPerExport };
}

/** How long each span of the load lasts. */
const spanNanos = 842_000_000n;

/**
 * The attribution an attributed Export's spans carry, at the cardinality of
 * bench/support/attributed-traffic.ts (OTLP has no tags): each value's digits are drawn per span
 * and Export; the template holds `#`s in their place. The environment is the resource's.
 */
const drawnAttributes = [
  { name: "user.id", prefix: "user-", digits: 5, values: attributedCardinality.users },
  { name: "session.id", prefix: "session-", digits: 7, values: attributedCardinality.sessions },
  { name: "feature", prefix: "feature-", digits: 2, values: attributedCardinality.features },
  { name: "team", prefix: "team-", digits: 1, values: attributedCardinality.teams },
];
/** The span attributes an attributed Export keeps as metadata (the service's OTLP_METADATA_ATTRIBUTES). */
export const otlpMetadataAttributes = "feature,team";

/**
 * An Export whose spans' trace ids end in 4 bytes, whose response ids (as OpenLLMetry's openai
 * spans carry them) end in 8 hex digits, and whose start and end times (fixed64) are to be
 * overwritten per Export: their offsets in the encoding.
 */
export function exportTemplate(
  spans: number,
  attributed = false,
): {
  template: Buffer;
  counterOffsets: number[];
  responseIdOffsets: number[];
  startOffsets: number[];
  endOffsets: number[];
  /** Where each drawn attribute's digits are, and how many values it has. */
  drawn: { offsets: number[]; digits: number; values: number }[];
} {
  const now = BigInt(Date.now()) * 1_000_000n;
  const traceIds = Array.from({ length: spans }, () => Buffer.concat([randomBytes(12), Buffer.from([0xde, 0xad, 0xbe, 0xef])]));
  const responseIds = traceIds.map(() => `chatcmpl-${randomBytes(10).toString("hex")}00000000`);
  const request = create(ExportTraceServiceRequestSchema, {
    resourceSpans: [
      {
        resource: { attributes: attributes({ "service.name": "bench", "deployment.environment.name": "production" }) },
        scopeSpans: [
          {
            scope: { name: "opentelemetry.instrumentation.openai.v1", version: "0.62.4" },
            spans: traceIds.map((traceId, i) => ({
              traceId,
              spanId: randomBytes(8),
              name: "openai.chat",
              kind: 3,
              startTimeUnixNano: now - spanNanos,
              endTimeUnixNano: now,
              attributes: attributes({
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
                "gen_ai.response.id": responseIds[i]!,
                "gen_ai.usage.input_tokens": 1234,
                "gen_ai.usage.output_tokens": 567,
                "gen_ai.usage.cache_read.input_tokens": 1000,
                "gen_ai.is_streaming": false,
                ...(attributed
                  ? Object.fromEntries(drawnAttributes.map((a) => [a.name, a.prefix + "#".repeat(a.digits)]))
                  : { "user.id": "cust_42" }),
              }),
            })),
          },
        ],
      },
    ],
  });
  const template = Buffer.from(toBinary(ExportTraceServiceRequestSchema, request));
  const counterOffsets = traceIds.map((id) => template.indexOf(id) + 12);
  const responseIdOffsets = responseIds.map((id) => template.indexOf(id, 0, "latin1") + id.length - 8);
  const startOffsets = fixed64Offsets(template, 7, now - spanNanos);
  const endOffsets = fixed64Offsets(template, 8, now);
  if (counterOffsets.some((o) => o < 12) || responseIdOffsets.some((o) => o < 8)) throw new Error("an id is not in the encoded Export");
  if (startOffsets.length !== spans || endOffsets.length !== spans) throw new Error("a span time is not in the encoded Export");
  const drawn = (attributed ? drawnAttributes : []).map((a) => ({ offsets: textOffsets(template, a.prefix + "#".repeat(a.digits), a.prefix.length), ...a }));
  if (drawn.some((d) => d.offsets.length !== spans)) throw new Error("a drawn attribute is not in every span of the encoded Export");
  return { template, counterOffsets, responseIdOffsets, startOffsets, endOffsets, drawn };
}

/** Where a fixed64 field (its tag, then `value`) holds `value` in `encoded`: the offsets of the value. */
function fixed64Offsets(encoded: Buffer, fieldNumber: number, value: bigint): number[] {
  const field = Buffer.alloc(9);
  field[0] = (fieldNumber << 3) | 1;
  field.writeBigUInt64LE(value, 1);
  const offsets: number[] = [];
  for (let at = encoded.indexOf(field); at >= 0; at = encoded.indexOf(field, at + 9)) offsets.push(at + 1);
  return offsets;
}

/** Where `text` is in `encoded`, each offset moved on by `skip`. */
function textOffsets(encoded: Buffer, text: string, skip: number): number[] {
  const offsets: number[] = [];
  for (let at = encoded.indexOf(text, 0, "latin1"); at >= 0; at = encoded.indexOf(text, at + text.length, "latin1")) offsets.push(at + skip);
  return offsets;
}

function post(url: string, key: string, body: Buffer, agent: Agent): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/traces`, {
      method: "POST",
      agent,
      headers: { "content-type": "application/x-protobuf", authorization: `Bearer ${key}`, "content-length": body.length },
    });
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}
