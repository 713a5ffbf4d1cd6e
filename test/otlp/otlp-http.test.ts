import { request as httpRequest } from "node:http";
import { gzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/test-service.js";
import { fastPathsOn, otlpReaderOff } from "../support/fast-paths.js";
import {
  exportOf,
  genAiSpan,
  hex,
  newSpanId,
  newTraceId,
  postExport,
  postJson,
  postLongAgoRetryAndTwin,
  Status_StatusCode,
  storedOtlp,
} from "./otlp-support.js";

/** OTLP/HTTP on POST /v1/traces over real sockets: encodings, compression, refusals, limits, retries, nesting. */
let service: TestService;
let key: string;
let accountId: string;
// The spec's JSON trace keeps MAX_BODY_BYTES; OTLP Exports have their own, larger limit.
const maxBodyBytes = 16_384;
const otlpMaxBodyBytes = 65_536;

const stored = () => storedOtlp(service.store, accountId);

/** An Export in the OTLP JSON encoding, written out as raw text the way exporters send it. */
function otlpJson(traceId: string, spanId: string, extra = ""): string {
  return `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"json-svc"}}]},
    "scopeSpans":[{"scope":{"name":"curl"},"spans":[{"traceId":"${traceId}","spanId":"${spanId}","parentSpanId":"",
    "name":"chat gpt-4o-mini","kind":3,"startTimeUnixNano":"1763800000000000000","endTimeUnixNano":1763800000842000000,
    "attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},
      {"key":"gen_ai.provider.name","value":{"stringValue":"openai"}},
      {"key":"gen_ai.request.model","value":{"stringValue":"gpt-4o-mini"}},
      {"key":"gen_ai.usage.input_tokens","value":{"intValue":"1200"}},
      {"key":"gen_ai.usage.output_tokens","value":{"intValue":350}}${extra}],
    "status":{"code":2,"message":"boom"}}]}]}]}`;
}

describe.each([fastPathsOn, otlpReaderOff])("%s", (_switches, switches) => {
  beforeAll(async () => {
    service = await startTestService({
      ...switches,
      maxBodyBytes,
      otlpMaxBodyBytes,
      plans: {
        free: { per_minute: 2, per_month: 1000 },
        metered: { per_minute: 1000, per_month: 3 },
        pro: { per_minute: 100_000, per_month: 1_000_000 },
      },
    });
    ({ key, accountId } = await service.createKey("pro"));
  });

  describe("encodings", () => {
    it("protobuf: 200 with an empty ExportTraceServiceResponse in protobuf, after the trace is stored", async () => {
      const span = genAiSpan();
      const answer = await postExport(service.url, key, exportOf([span]));
      expect(answer.status).toBe(200);
      expect(answer.headers.get("content-type")).toBe("application/x-protobuf");
      expect(answer.response?.partialSuccess).toBeUndefined();
      expect(answer.headers.get("x-ratelimit-limit")).toBe("100000");
      expect(answer.headers.get("x-quota-limit")).toBe("1000000");
      expect((await stored()).map((t) => t.otlpSpanId)).toContain(hex(span.spanId));
    });

    it("OTLP JSON (hex ids, lowerCamelCase, enum integers, 64-bit integers as strings or numbers): 200 with a JSON response", async () => {
      const traceId = hex(newTraceId());
      const spanId = hex(newSpanId());
      const answer = await postJson(service.url, key, otlpJson(traceId, spanId));
      expect(answer.status).toBe(200);
      expect(answer.headers.get("content-type")).toBe("application/json");
      expect(answer.json).toEqual({});
      const trace = (await stored()).find((t) => t.otlpSpanId === spanId);
      expect(trace).toMatchObject({
        otlpTraceId: traceId,
        tokensIn: 1200,
        tokensOut: 350,
        latencyMs: 842,
        status: "error",
        error: "boom",
        serviceName: "json-svc",
      });
    });

    it("OTLP JSON partial_success is JSON too", async () => {
      const spanId = hex(newSpanId());
      const text = otlpJson(hex(newTraceId()), spanId).replace('"stringValue":"openai"', '"stringValue":"cohere"');
      const answer = await postJson(service.url, key, text);
      expect(answer.status).toBe(200);
      expect(answer.json).toEqual({
        partialSuccess: {
          rejectedSpans: "1",
          errorMessage: `span ${spanId}: provider "cohere" is not supported (openai, anthropic or gemini)`,
        },
      });
    });

    it("JSON without resourceSpans is the spec's trace, answered as before", async () => {
      const answer = await postJson(service.url, key, JSON.stringify({ provider: "openai" }));
      expect(answer.status).toBe(400);
      expect(answer.json.error).toBe("Validation error");
    });

    it("protobuf with a charset-like parameter is still protobuf; an unknown content type is the spec's 415", async () => {
      expect(
        (await postExport(service.url, key, exportOf([genAiSpan()]), { "content-type": "application/x-protobuf; proto=x" })).status,
      ).toBe(200);
      const text = await postJson(service.url, key, "x", { "content-type": "text/plain" });
      expect(text.status).toBe(415);
      expect(text.json).toEqual({ error: "Unsupported media type", details: 'Content-Type must be application/json, got "text/plain"' });
    });
  });

  describe("gzip", () => {
    it("a gzip-compressed protobuf Export and a gzip-compressed OTLP JSON Export are stored", async () => {
      const span = genAiSpan();
      const { toBinary } = await import("@bufbuild/protobuf");
      const { ExportTraceServiceRequestSchema } = await import("../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js");
      const body = gzipSync(toBinary(ExportTraceServiceRequestSchema, exportOf([span])));
      expect((await postExport(service.url, key, body, { "content-encoding": "gzip" })).status).toBe(200);
      const spanId = hex(newSpanId());
      expect((await postJson(service.url, key, gzipSync(otlpJson(hex(newTraceId()), spanId)), { "content-encoding": "gzip" })).status).toBe(
        200,
      );
      const ids = (await stored()).map((t) => t.otlpSpanId);
      expect(ids).toEqual(expect.arrayContaining([hex(span.spanId), spanId]));
    });

    it("a gzip bomb (small on the wire, huge inflated) is 413 with a google.rpc.Status, without being inflated in full", async () => {
      // 16 MiB of zeros is about 16 KiB of gzip: under the wire limit, a thousand times over it inflated.
      const small = gzipSync(Buffer.alloc(16 * 1024 * 1024));
      expect(small.length).toBeLessThan(otlpMaxBodyBytes);
      const before = process.memoryUsage().rss;
      const answer = await postExport(service.url, key, small, { "content-encoding": "gzip" });
      expect(answer.status).toBe(413);
      expect(answer.refusal).toMatchObject({ code: 8, message: `request body exceeds the limit of ${otlpMaxBodyBytes} bytes` });
      expect(process.memoryUsage().rss - before).toBeLessThan(16 * 1024 * 1024);
    });

    it("a body that is not gzip is 400; another Content-Encoding is 415", async () => {
      const notGzip = await postExport(service.url, key, Buffer.from("plain bytes"), { "content-encoding": "gzip" });
      expect(notGzip.status).toBe(400);
      expect(notGzip.refusal?.message).toMatch(/^request body is not valid gzip/);
      const brotli = await postExport(service.url, key, exportOf([genAiSpan()]), { "content-encoding": "br" });
      expect(brotli.status).toBe(415);
      expect(brotli.refusal).toMatchObject({ code: 3, message: 'Content-Encoding must be gzip or identity, got "br"' });
    });

    it("another content type is 415 before its gzip is looked at (the spec's order: size, type, content)", async () => {
      const text = await postJson(service.url, key, "not gzip", { "content-type": "text/plain", "content-encoding": "gzip" });
      expect(text.status).toBe(415);
      expect(text.json).toEqual({ error: "Unsupported media type", details: 'Content-Type must be application/json, got "text/plain"' });
    });
  });

  describe("malformed Exports are 400 with a google.rpc.Status in the request's encoding, never 500", () => {
    it.each([
      ["a truncated message", Buffer.from([0x0a, 0x10, 0x01])],
      ["a bad wire type", Buffer.from([0x0f, 0xff, 0xff])],
      ["random bytes", Buffer.from("not a protobuf at all, just text \u0000\u0001")],
    ])("protobuf: %s", async (_name, body) => {
      const answer = await postExport(service.url, key, body);
      expect(answer.status).toBe(400);
      expect(answer.refusal?.code).toBe(3);
      expect(answer.refusal?.message).toMatch(/^request body is not a valid protobuf ExportTraceServiceRequest/);
    });

    it.each([
      ["resourceSpans of the wrong type", '{"resourceSpans":"x"}', /^request body is not a valid OTLP JSON ExportTraceServiceRequest/],
      [
        "a trace id that is not hex",
        '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]}',
        /^resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]\.traceId: must be a hex string$/,
      ],
      [
        "a span of the wrong shape",
        '{"resourceSpans":[{"scopeSpans":[{"spans":[{"startTimeUnixNano":"soon"}]}]}]}',
        /^request body is not a valid OTLP JSON/,
      ],
    ])("JSON: %s", async (_name, text, message) => {
      const answer = await postJson(service.url, key, text);
      expect(answer.status).toBe(400);
      expect(answer.json.code).toBe(3);
      expect(answer.json.message).toMatch(message);
    });

    it("ids of the wrong length (a parent's too, which would be stored) reject the span in partial_success", async () => {
      const spans = [genAiSpan({ traceId: Buffer.from("0102", "hex") }), genAiSpan({ parentSpanId: Buffer.alloc(4096, 1) })];
      const answer = await postExport(service.url, key, exportOf(spans));
      expect(answer.status).toBe(200);
      expect(answer.response?.partialSuccess?.errorMessage).toBe(
        spans.map((s) => `span ${hex(s.spanId)}: trace, span and parent span ids must be 16, 8 and 8 (or 0) bytes`).join("; "),
      );
    });
  });

  describe("authentication and limits", () => {
    it("no key, or an unknown one: 401 with a google.rpc.Status", async () => {
      for (const k of [undefined, `ct_${"A".repeat(40)}`]) {
        const answer = await postExport(service.url, k, exportOf([genAiSpan()]));
        expect(answer.status).toBe(401);
        expect(answer.refusal).toMatchObject({ code: 16, message: "Invalid API key" });
        expect(answer.headers.get("www-authenticate")).toBe("Bearer");
      }
    });

    it("one Export is one request in the per-minute window: 429 with Retry-After past it", async () => {
      const { key: free } = await service.createKey("free");
      const many = exportOf([genAiSpan(), genAiSpan(), genAiSpan()]);
      expect((await postExport(service.url, free, many)).status).toBe(200);
      expect((await postExport(service.url, free, exportOf([genAiSpan()]))).status).toBe(200);
      const limited = await postExport(service.url, free, exportOf([genAiSpan()]));
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(limited.refusal).toMatchObject({ code: 8, message: "Rate limit exceeded" });
    });

    it("the monthly quota counts stored traces: what fits is stored, the rest is in partial_success; then 429 with Retry-After", async () => {
      const { key: metered, accountId: meteredAccount } = await service.createKey("metered");
      const first = await postExport(
        service.url,
        metered,
        exportOf([genAiSpan(), genAiSpan({ name: "not an LLM", attributes: { "http.route": "/" } })]),
      );
      expect(first.status).toBe(200);
      expect(first.headers.get("x-quota-remaining")).toBe("2");
      const spans = [genAiSpan(), genAiSpan(), genAiSpan()];
      const partial = await postExport(service.url, metered, exportOf(spans));
      expect(partial.status).toBe(200);
      expect(Number(partial.response?.partialSuccess?.rejectedSpans)).toBe(1);
      expect(partial.response?.partialSuccess?.errorMessage).toBe(`span ${hex(spans[2]!.spanId)}: Monthly quota exceeded`);
      expect(partial.headers.get("x-quota-remaining")).toBe("0");
      const storedIds = (await storedOtlp(service.store, meteredAccount)).map((t) => t.otlpSpanId);
      expect(storedIds).toHaveLength(3);
      expect(storedIds).toEqual(expect.arrayContaining([hex(spans[0]!.spanId), hex(spans[1]!.spanId)]));
      const full = await postExport(service.url, metered, exportOf([genAiSpan()]));
      expect(full.status).toBe(429);
      expect(Number(full.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(full.refusal).toMatchObject({ code: 8, message: "Monthly quota exceeded" });
      // Nothing to store: not refused.
      expect((await postExport(service.url, metered, exportOf([]))).status).toBe(200);
    });
  });

  describe("one call, one trace", () => {
    it("a retried Export (same trace and span ids) stores nothing twice, and counts once", async () => {
      const request = exportOf([genAiSpan(), genAiSpan()]);
      const first = await postExport(service.url, key, request);
      const again = await postExport(service.url, key, request);
      expect([first.status, again.status]).toEqual([200, 200]);
      expect(again.response?.partialSuccess).toBeUndefined();
      const ids = new Set(request.resourceSpans[0]!.scopeSpans[0]!.spans.map((s) => hex(s.spanId)));
      expect((await stored()).filter((t) => ids.has(t.otlpSpanId))).toHaveLength(2);
      expect(Number(again.headers.get("x-quota-remaining"))).toBe(Number(first.headers.get("x-quota-remaining")));
    });

    it("a call that started long ago is stored once however often its Export is retried, and its twin span 800 ms later is not stored", async () => {
      const { call, twin, statuses } = await postLongAgoRetryAndTwin(service.url, key);
      expect(statuses).toEqual([200, 200, 200]);
      const mine = (await stored()).filter((t) => [call, twin].some((s) => hex(s.spanId) === t.otlpSpanId));
      expect(mine.map((t) => [t.otlpSpanId, t.tokensOut])).toEqual([[hex(call.spanId), 6]]);
    });

    const anthropic = {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "anthropic",
      "gen_ai.request.model": "claude-haiku-4-5",
      "gen_ai.response.model": "claude-haiku-4-5-20251001",
      "gen_ai.usage.input_tokens": 2234,
      "gen_ai.usage.output_tokens": 567,
    };

    it("nested spans in one Export (OpenLLMetry's anthropic.messages.create around anthropic.chat) are stored once, as the outer span", async () => {
      const traceId = newTraceId();
      const outer = genAiSpan({ name: "anthropic.messages.create", traceId, attributes: anthropic });
      const inner = genAiSpan({ name: "anthropic.chat", traceId, parentSpanId: outer.spanId, attributes: anthropic });
      expect((await postExport(service.url, key, exportOf([inner, outer]))).status).toBe(200);
      const mine = (await stored()).filter((t) => t.otlpTraceId === hex(traceId));
      expect(mine.map((t) => t.otlpSpanId)).toEqual([hex(outer.spanId)]);
    });

    it("nested spans in different Exports are stored once, in either order, also when sent at the same time", async () => {
      for (const order of ["child first", "parent first", "concurrently"]) {
        const traceId = newTraceId();
        const outer = genAiSpan({ name: "anthropic.messages.create", traceId, attributes: anthropic });
        const inner = genAiSpan({ name: "anthropic.chat", traceId, parentSpanId: outer.spanId, attributes: anthropic });
        if (order === "concurrently") {
          await Promise.all([postExport(service.url, key, exportOf([inner])), postExport(service.url, key, exportOf([outer]))]);
        } else {
          for (const span of order === "child first" ? [inner, outer] : [outer, inner])
            expect((await postExport(service.url, key, exportOf([span]))).status).toBe(200);
        }
        expect(
          (await stored()).filter((t) => t.otlpTraceId === hex(traceId)),
          order,
        ).toHaveLength(1);
      }
    });

    it("the anthropic SDK's span beside OpenLLMetry's (different traces, same response id) is stored once, the first one", async () => {
      const sdk = genAiSpan({ name: "anthropic.messages.create", attributes: { ...anthropic, "gen_ai.response.id": "msg_01abc" } });
      const openllmetry = genAiSpan({
        name: "anthropic.chat",
        attributes: { ...anthropic, "gen_ai.usage.output_tokens": 568, "gen_ai.response.id": "msg_01abc" },
      });
      const request = exportOf([sdk, openllmetry]);
      request.resourceSpans[0]!.scopeSpans.push({
        ...request.resourceSpans[0]!.scopeSpans[0]!,
        scope: {
          $typeName: "opentelemetry.proto.common.v1.InstrumentationScope",
          name: "opentelemetry.instrumentation.anthropic",
          version: "",
          attributes: [],
          droppedAttributesCount: 0,
        },
        spans: [openllmetry],
      });
      request.resourceSpans[0]!.scopeSpans[0]!.spans = [sdk];
      expect((await postExport(service.url, key, request)).status).toBe(200);
      // The same response id in a later Export (another retry path) is not stored again either.
      const late = genAiSpan({ attributes: { ...anthropic, "gen_ai.response.id": "msg_01abc" } });
      expect((await postExport(service.url, key, exportOf([late]))).status).toBe(200);
      const mine = (await stored()).filter((t) => [sdk, openllmetry, late].some((s) => hex(s.spanId) === t.otlpSpanId));
      expect(mine.map((t) => [t.otlpSpanId, t.tokensOut])).toEqual([[hex(sdk.spanId), 567]]);
    });

    it("a failed call reported by two instrumentations (no response id, overlapping times) is stored once, also across Exports; two concurrent failures twice", async () => {
      const start = Date.now() - 5000;
      const failed = (startMs: number) =>
        genAiSpan({
          startMs,
          durationMs: 300,
          status: { code: Status_StatusCode.ERROR },
          attributes: { ...anthropic, "error.type": "api_error" },
        });
      const scopes = (a: ReturnType<typeof failed>[], b: ReturnType<typeof failed>[]) => {
        const request = exportOf(a, undefined, "com.anthropic.sdk.python");
        request.resourceSpans.push(exportOf(b, undefined, "opentelemetry.instrumentation.anthropic").resourceSpans[0]!);
        return request;
      };
      const one = [failed(start), failed(start + 1)];
      const two = [failed(start + 1000), failed(start + 1010), failed(start + 1001), failed(start + 1011)];
      expect((await postExport(service.url, key, scopes([one[0]!], [one[1]!]))).status).toBe(200);
      expect((await postExport(service.url, key, scopes([two[0]!, two[1]!], [two[2]!, two[3]!]))).status).toBe(200);
      // The pair split over two Exports (a batch boundary between the two span ends), the first Export retried.
      const split = [failed(start + 2000), failed(start + 2001)];
      const firstHalf = scopes([split[0]!], []);
      expect((await postExport(service.url, key, firstHalf)).status).toBe(200);
      expect((await postExport(service.url, key, firstHalf)).status).toBe(200);
      expect((await postExport(service.url, key, scopes([], [split[1]!]))).status).toBe(200);
      const ids = (spans: typeof one) => spans.map((s) => hex(s.spanId));
      const all = await stored();
      expect(all.filter((t) => ids(one).includes(t.otlpSpanId))).toHaveLength(1);
      expect(all.filter((t) => ids(two).includes(t.otlpSpanId))).toHaveLength(2);
      expect(all.filter((t) => ids(split).includes(t.otlpSpanId)).map((t) => t.otlpSpanId)).toEqual([hex(split[0]!.spanId)]);
    });
  });

  describe("bodies", () => {
    it("a chunked protobuf body (as the JavaScript exporter sends it) is read; one over the limit is 413", async () => {
      const { toBinary } = await import("@bufbuild/protobuf");
      const { ExportTraceServiceRequestSchema } = await import("../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js");
      const send = (body: Uint8Array) =>
        new Promise<number>((resolve, reject) => {
          const req = httpRequest(`${service.url}/v1/traces`, {
            method: "POST",
            headers: { authorization: `Bearer ${key}`, "content-type": "application/x-protobuf", "transfer-encoding": "chunked" },
          });
          req.on("response", (res) => {
            res.resume();
            resolve(res.statusCode!);
          });
          req.on("error", reject);
          req.end(body);
        });
      expect(await send(toBinary(ExportTraceServiceRequestSchema, exportOf([genAiSpan()])))).toBe(200);
      const big = exportOf(Array.from({ length: 400 }, () => genAiSpan()));
      expect(toBinary(ExportTraceServiceRequestSchema, big).length).toBeGreaterThan(otlpMaxBodyBytes);
      expect(await send(toBinary(ExportTraceServiceRequestSchema, big))).toBe(413);
    });
  });

  describe("OTLP_MAX_BODY_BYTES: an Export's own limit, while the spec's JSON trace keeps MAX_BODY_BYTES", () => {
    const chatAttributes = {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "gpt-4o-mini",
      "gen_ai.usage.input_tokens": 1200,
      "gen_ai.usage.output_tokens": 350,
    };
    /** `count` calls in one Export, each span carrying a prompt of `pad` characters (as content capture does). */
    const batch = (count: number, pad: number) =>
      exportOf(Array.from({ length: count }, () => genAiSpan({ attributes: { ...chatAttributes, "gen_ai.prompt": "p".repeat(pad) } })));

    it("protobuf, plain and gzipped, between the two limits: every call stored", async () => {
      const { toBinary } = await import("@bufbuild/protobuf");
      const { ExportTraceServiceRequestSchema } = await import("../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js");
      for (const gzip of [false, true]) {
        const request = batch(20, 2000);
        const body = toBinary(ExportTraceServiceRequestSchema, request);
        expect(body.length).toBeGreaterThan(maxBodyBytes);
        expect(body.length).toBeLessThan(otlpMaxBodyBytes);
        const answer = await postExport(service.url, key, gzip ? gzipSync(body) : body, gzip ? { "content-encoding": "gzip" } : {});
        expect(answer.status).toBe(200);
        expect(answer.response?.partialSuccess).toBeUndefined();
        const ids = new Set((await stored()).map((t) => t.otlpSpanId));
        expect(request.resourceSpans[0]!.scopeSpans[0]!.spans.every((s) => ids.has(hex(s.spanId)))).toBe(true);
      }
    });

    it("OTLP JSON, plain (sent chunked, without a length) and gzipped, between the two limits: stored", async () => {
      for (const gzip of [false, true]) {
        const spanId = hex(newSpanId());
        const text = otlpJson(hex(newTraceId()), spanId, `,{"key":"gen_ai.prompt","value":{"stringValue":"${"p".repeat(30_000)}"}}`);
        expect(text.length).toBeGreaterThan(maxBodyBytes);
        const body = gzip ? gzipSync(text) : text;
        // A stream: fetch sends it chunked, so the limit is met while reading, not in Content-Length.
        const response = await fetch(`${service.url}/v1/traces`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${key}`, ...(gzip ? { "content-encoding": "gzip" } : {}) },
          body: new Blob([body]).stream(),
          duplex: "half",
        } as RequestInit);
        expect(response.status, await response.text()).toBe(200);
        expect((await stored()).map((t) => t.otlpSpanId)).toContain(spanId);
      }
    });

    it("over OTLP_MAX_BODY_BYTES: 413 naming that limit, protobuf and OTLP JSON", async () => {
      const proto = await postExport(service.url, key, batch(40, 2000));
      expect(proto.status).toBe(413);
      expect(proto.refusal?.message).toBe(`request body exceeds the limit of ${otlpMaxBodyBytes} bytes`);
      const padding = `,{"key":"p","value":{"stringValue":"${"p".repeat(otlpMaxBodyBytes)}"}}`;
      expect((await postJson(service.url, key, otlpJson(hex(newTraceId()), hex(newSpanId()), padding))).status).toBe(413);
    });

    it("the spec's JSON trace over MAX_BODY_BYTES is still 413 at that limit, plain or gzipped, though under the OTLP limit", async () => {
      const trace = {
        provider: "openai",
        model: "gpt-4o-mini",
        tokens_in: 1,
        tokens_out: 1,
        latency_ms: 1,
        cost_usd: 0,
        status: "success",
      };
      const padded = JSON.stringify({ ...trace, error: "e".repeat(maxBodyBytes) });
      expect(padded.length).toBeLessThan(otlpMaxBodyBytes);
      for (const body of [padded, gzipSync(padded)]) {
        const answer = await postJson(service.url, key, body, body instanceof Buffer ? { "content-encoding": "gzip" } : {});
        expect(answer.status).toBe(413);
        expect(JSON.stringify(answer.json)).toContain(String(maxBodyBytes));
      }
    });
  });
});
