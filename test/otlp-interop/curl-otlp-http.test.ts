import { fromBinary } from "@bufbuild/protobuf";
import { beforeAll, describe, expect, it } from "vitest";
import { PriceCheck, TraceSource } from "../../gen/calltrace/v1/trace_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { ExportTraceServiceResponseSchema } from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import { startTestService, type TestService } from "../support/test-service.js";
import { chatSpan, curlPost, otlpJson, otlpProtobuf, type Span, storedFor, tableCost, withIds } from "./interop.js";

// OTLP/HTTP on POST /v1/traces as the real curl binary sends it: the OTLP JSON encoding and
// protobuf, gzip, a retried Export, a key whose monthly quota holds only part of an Export, and
// bodies that are not what they claim to be (400 with a google.rpc.Status, never a 500).

let service: TestService;

beforeAll(async () => {
  service = await startTestService({ plans: { free: { per_minute: 1000, per_month: 50_000 }, tiny: { per_minute: 1000, per_month: 3 } } });
});

const json = { "Content-Type": "application/json" };
const protobuf = { "Content-Type": "application/x-protobuf" };

async function newKey(plan = "free"): Promise<{ key: string; accountId: string; auth: Record<string, string> }> {
  const { key, accountId } = await service.createKey(plan);
  return { key, accountId, auth: { Authorization: `Bearer ${key}` } };
}

const url = () => `${service.url}/v1/traces`;

/** A 200 OTLP answer in the request's encoding: the partial success, if any. */
function exportAnswer(answer: { status: number; headers: Record<string, string>; body: Buffer }, encoding: "json" | "protobuf") {
  expect(answer.status, answer.body.toString()).toBe(200);
  if (encoding === "json") {
    expect(answer.headers["content-type"]).toMatch(/^application\/json/);
    const body = JSON.parse(answer.body.toString()) as { partialSuccess?: { rejectedSpans?: string | number; errorMessage?: string } };
    return { rejected: Number(body.partialSuccess?.rejectedSpans ?? 0), message: body.partialSuccess?.errorMessage ?? "" };
  }
  expect(answer.headers["content-type"]).toMatch(/^application\/x-protobuf/);
  const body = fromBinary(ExportTraceServiceResponseSchema, answer.body);
  return { rejected: Number(body.partialSuccess?.rejectedSpans ?? 0n), message: body.partialSuccess?.errorMessage ?? "" };
}

describe("OTLP JSON and protobuf through curl", () => {
  it("stores a GenAI span sent as OTLP JSON, priced by the server, with its hex ids and service name", async () => {
    const { accountId, auth } = await newKey();
    const [span] = withIds([
      chatSpan("openai", "gpt-4.1", 5000, 300, {
        "gen_ai.response.model": "gpt-4.1-2025-04-14",
        "gen_ai.usage.cache_read.input_tokens": 4096,
      }),
    ]) as [Span];
    const answer = await curlPost(url(), otlpJson([span]), { ...json, ...auth });
    expect(exportAnswer(answer, "json").rejected).toBe(0);
    const [trace, ...rest] = await storedFor(service, accountId);
    expect(rest).toEqual([]);
    expect(trace).toMatchObject({
      provider: "openai",
      model: "gpt-4.1-2025-04-14",
      tokensIn: 5000,
      tokensOut: 300,
      tokensCachedIn: 4096,
      latencyMs: 842,
      status: "success",
      source: TraceSource.OTLP,
      priceCheck: PriceCheck.SERVER,
      otlpTraceId: span.traceId,
      otlpSpanId: span.spanId,
      otlpParentSpanId: "",
      serviceName: "curl-app",
    });
    const cost = tableCost("openai", "gpt-4.1", { tokensIn: 5000, tokensOut: 300, tokensCachedIn: 4096 });
    expect(trace!.serverCostUsd).toBe(cost);
    expect(trace!.costUsd).toBe(cost);
  });

  it("reads the older attribute names (gen_ai.system, prompt_tokens, completion_tokens) and provider aliases, case-insensitively", async () => {
    const { accountId, auth } = await newKey();
    const spans = withIds([
      {
        name: "anthropic.chat",
        attributes: {
          "gen_ai.system": "Anthropic",
          "gen_ai.request.model": "claude-sonnet-4-5",
          "gen_ai.usage.prompt_tokens": 900,
          "gen_ai.usage.completion_tokens": 120,
        },
      },
      chatSpan("az.ai.openai", "gpt-4o", 10, 20),
      chatSpan("gcp.vertex_ai", "gemini-2.5-flash", 30, 40),
    ]);
    expect(exportAnswer(await curlPost(url(), otlpJson(spans), { ...json, ...auth }), "json").rejected).toBe(0);
    const stored = await storedFor(service, accountId);
    const bySpan = new Map(stored.map((t) => [t.otlpSpanId, t]));
    expect(spans.map((s) => bySpan.get(s.spanId)?.provider)).toEqual(["anthropic", "openai", "gemini"]);
    expect(bySpan.get(spans[0]!.spanId)).toMatchObject({ tokensIn: 900, tokensOut: 120 });
  });

  it("skips spans that are not LLM calls and rejects an unknown provider by name in partial_success", async () => {
    const { accountId, auth } = await newKey();
    const spans = withIds([
      { name: "GET /checkout", attributes: { "http.request.method": "GET", "http.response.status_code": 200 } },
      { name: "invoke_agent shopper", attributes: { "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "openai" } },
      { name: "SELECT orders", attributes: { "db.system.name": "postgresql" } },
      chatSpan("mistral_ai", "mistral-large", 100, 10),
      chatSpan("openai", "gpt-4o-mini", 100, 10),
    ]);
    const result = exportAnswer(await curlPost(url(), otlpJson(spans), { ...json, ...auth }), "json");
    expect(result.rejected).toBe(1);
    expect(result.message).toContain("mistral_ai");
    expect((await storedFor(service, accountId)).map((t) => t.otlpSpanId)).toEqual([spans[4]!.spanId]);
  });

  it("takes a failed call's status message as its error", async () => {
    const { accountId, auth } = await newKey();
    const spans = withIds([
      { ...chatSpan("gemini", "gemini-2.5-pro", 12, 0, { "error.type": "429" }), error: "429 RESOURCE_EXHAUSTED. quota" },
    ]);
    exportAnswer(await curlPost(url(), otlpProtobuf(spans), { ...protobuf, ...auth }), "protobuf");
    expect(await storedFor(service, accountId)).toMatchObject([
      { status: "error", error: "429 RESOURCE_EXHAUSTED. quota", model: "gemini-2.5-pro" },
    ]);
  });

  for (const encoding of ["json", "protobuf"] as const) {
    it(`accepts a gzip-compressed ${encoding} Export (Content-Encoding: gzip)`, async () => {
      const { accountId, auth } = await newKey();
      const spans = withIds([
        chatSpan("anthropic", "claude-haiku-4-5", 2234, 567, {
          "gen_ai.usage.cache_read.input_tokens": 900,
          "gen_ai.usage.cache_creation.input_tokens": 100,
        }),
      ]);
      const body = encoding === "json" ? otlpJson(spans) : otlpProtobuf(spans);
      const answer = await curlPost(url(), body, { ...(encoding === "json" ? json : protobuf), ...auth }, { gzip: true });
      expect(exportAnswer(answer, encoding).rejected).toBe(0);
      const [trace] = await storedFor(service, accountId);
      expect(trace).toMatchObject({
        tokensIn: 2234,
        tokensOut: 567,
        tokensCachedIn: 900,
        tokensCacheWrite: 100,
        otlpSpanId: spans[0]!.spanId,
      });
      expect(trace!.costUsd).toBe(
        tableCost("anthropic", "claude-haiku-4-5", { tokensIn: 2234, tokensOut: 567, tokensCachedIn: 900, tokensCacheWrite: 100 }),
      );
    });
  }

  it("stores nothing twice when an exporter retries the same Export", async () => {
    const { accountId, auth } = await newKey();
    const spans = withIds([chatSpan("openai", "gpt-4o", 10, 5), chatSpan("gemini", "gemini-2.0-flash", 20, 6)]);
    const body = otlpProtobuf(spans);
    for (let attempt = 0; attempt < 3; attempt++) exportAnswer(await curlPost(url(), body, { ...protobuf, ...auth }), "protobuf");
    // The same spans again, in JSON this time: still the same calls.
    exportAnswer(await curlPost(url(), otlpJson(spans), { ...json, ...auth }), "json");
    expect((await storedFor(service, accountId)).map((t) => t.otlpSpanId).sort()).toEqual(spans.map((s) => s.spanId).sort());
  });

  it("stores what the monthly quota holds, reports the rest in partial_success, then answers 429 with Retry-After", async () => {
    const { accountId, auth } = await newKey("tiny"); // 3 traces a month
    const calls = withIds([1, 2, 3, 4, 5].map((n) => chatSpan("openai", "gpt-4o-mini", n * 100, n)));
    // A span that is not an LLM call is neither stored nor counted.
    const http = withIds([{ name: "POST /v1/chat", attributes: { "http.request.method": "POST" } }]);
    const partial = exportAnswer(await curlPost(url(), otlpProtobuf([...http, ...calls]), { ...protobuf, ...auth }), "protobuf");
    expect(partial.rejected).toBe(2);
    expect(partial.message).toMatch(/quota/i);
    expect(await storedFor(service, accountId)).toHaveLength(3);

    const refused = await curlPost(url(), otlpJson(withIds([chatSpan("openai", "gpt-4o-mini", 1, 1)])), { ...json, ...auth });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    expect(await storedFor(service, accountId)).toHaveLength(3);
  });
});

describe("bodies that are not what they claim: 400 with a google.rpc.Status, never a 500", () => {
  const malformed: [string, Uint8Array][] = [
    ["a length that runs past the end", Uint8Array.from([0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01])],
    ["a wire type protobuf does not have", Uint8Array.from([0x0f, 0x01, 0x02])],
    ["text", new TextEncoder().encode("this is not protobuf at all")],
    ["a truncated Export", otlpProtobuf(withIds([chatSpan("openai", "gpt-4o", 1, 1)])).slice(0, 40)],
  ];
  for (const [what, body] of malformed) {
    it(`protobuf with ${what}`, async () => {
      const { accountId, auth } = await newKey();
      const answer = await curlPost(url(), body, { ...protobuf, ...auth });
      expect(answer.status, answer.body.toString()).toBe(400);
      expect(answer.headers["content-type"]).toMatch(/^application\/x-protobuf/);
      const status = fromBinary(StatusSchema, answer.body);
      expect(status.message).not.toBe("");
      expect(await storedFor(service, accountId)).toEqual([]);
    });
  }

  it("OTLP JSON whose resourceSpans is not a list", async () => {
    const { auth } = await newKey();
    const answer = await curlPost(url(), JSON.stringify({ resourceSpans: { spans: 1 } }), { ...json, ...auth });
    expect(answer.status, answer.body.toString()).toBe(400);
    expect(answer.headers["content-type"]).toMatch(/^application\/json/);
    expect((JSON.parse(answer.body.toString()) as { message?: string }).message).toBeTruthy();
  });

  it("a body labelled gzip that is not gzip", async () => {
    const { auth } = await newKey();
    const answer = await curlPost(url(), otlpProtobuf(withIds([chatSpan("openai", "gpt-4o", 1, 1)])), {
      ...protobuf,
      ...auth,
      "Content-Encoding": "gzip",
    });
    expect(answer.status, answer.body.toString()).toBe(400);
  });

  it("a gzip bomb gets 413 (the limit counts decompressed bytes)", async () => {
    const { auth } = await newKey();
    const huge = new Uint8Array(service.config.otlpMaxBodyBytes * 2); // zeros: tens of kilobytes once compressed
    const answer = await curlPost(url(), huge, { ...protobuf, ...auth }, { gzip: true });
    expect(answer.status).toBe(413);
  });

  it("an Export without a key gets 401", async () => {
    const answer = await curlPost(url(), otlpProtobuf(withIds([chatSpan("openai", "gpt-4o", 1, 1)])), protobuf);
    expect(answer.status).toBe(401);
  });
});
