import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { PriceCheck, TraceSource } from "../../gen/calltrace/v1/trace_pb.js";
import { serverCost } from "../../src/pricing/server-prices.js";
import { startTestService, type TestService } from "../support/test-service.js";
import {
  type AttributeValue,
  exportOf,
  genAiSpan,
  hex,
  newSpanId,
  newTraceId,
  postExport,
  type SpanOptions,
  Status_StatusCode,
  storedOtlp,
} from "./otlp-support.js";

/**
 * The mapping table of docs/otlp.md, row by row: OTLP/HTTP protobuf Exports over a real socket,
 * read back from the store.
 */
let service: TestService;
let key: string;
let accountId: string;

beforeAll(async () => {
  service = await startTestService({ otlpMetadataAttributes: "app.feature, tenant.tier" });
  ({ key, accountId } = await service.createKey("pro"));
});

const chat = (extra: Record<string, AttributeValue> = {}, drop: string[] = []): Record<string, AttributeValue> => {
  const attributes: Record<string, AttributeValue> = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "gpt-4o-mini",
    "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
    "gen_ai.usage.input_tokens": 1200,
    "gen_ai.usage.output_tokens": 350,
    ...extra,
  };
  for (const name of drop) delete attributes[name];
  return attributes;
};

/** Sends one span alone and answers the trace stored for it (or undefined) and the Export's answer. */
async function one(options: SpanOptions, resource?: Record<string, AttributeValue>) {
  const span = genAiSpan(options);
  const answer = await postExport(service.url, key, exportOf([span], resource));
  expect(answer.status).toBe(200);
  const stored = (await storedOtlp(service.store, accountId)).find((t) => t.otlpSpanId === hex(span.spanId));
  return { stored, answer, span };
}

describe("which spans are LLM calls", () => {
  it.each(["chat", "text_completion", "generate_content", "embeddings"])("gen_ai.operation.name %s is a call", async (operation) => {
    const { stored } = await one({ attributes: chat({ "gen_ai.operation.name": operation }) });
    expect(stored).toBeDefined();
  });

  it("a provider with usage and no operation name is a call (older instrumentations)", async () => {
    const { stored } = await one({ attributes: chat({ "gen_ai.system": "openai" }, ["gen_ai.operation.name", "gen_ai.provider.name"]) });
    expect(stored?.provider).toBe("openai");
  });

  it("HTTP, database, tool and agent spans are skipped: not stored, not counted, not rejected", async () => {
    const before = (await storedOtlp(service.store, accountId)).length;
    const spans = [
      genAiSpan({ name: "GET /", attributes: { "http.request.method": "GET", "url.full": "https://api.openai.com/v1/chat" } }),
      genAiSpan({ name: "SELECT", attributes: { "db.system.name": "postgresql" } }),
      genAiSpan({ name: "execute_tool", attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.provider.name": "openai" } }),
      genAiSpan({ name: "invoke_agent", attributes: chat({ "gen_ai.operation.name": "invoke_agent" }) }),
      genAiSpan({ name: "provider without usage", attributes: { "gen_ai.provider.name": "openai" } }),
    ];
    const answer = await postExport(service.url, key, exportOf(spans));
    expect(answer.status).toBe(200);
    expect(answer.response?.partialSuccess).toBeUndefined();
    expect(answer.headers.get("x-quota-remaining")).toBeNull();
    expect((await storedOtlp(service.store, accountId)).length).toBe(before);
  });
});

describe("provider", () => {
  it.each([
    ["openai", "openai"],
    ["azure.ai.openai", "openai"],
    ["az.ai.openai", "openai"],
    ["Anthropic", "anthropic"],
    ["gemini", "gemini"],
    ["gcp.gemini", "gemini"],
    ["gcp.vertex_ai", "gemini"],
    ["GCP.GEN_AI", "gemini"],
    ["vertex_ai", "gemini"],
  ])("%s → %s (gen_ai.provider.name, case-insensitive)", async (name, provider) => {
    const { stored } = await one({ attributes: chat({ "gen_ai.provider.name": name }) });
    expect(stored?.provider).toBe(provider);
  });

  it.each([
    ["openai.chat", "openai"],
    ["openai.responses", "openai"],
    ["azure.chat", "openai"],
    ["anthropic.messages", "anthropic"],
    ["google.generative-ai", "gemini"],
    ["google.vertex.chat", "gemini"],
    ["vertex.anthropic.messages", "anthropic"],
  ])("the Vercel AI SDK's %s → %s (gen_ai.system or ai.model.provider)", async (name, provider) => {
    const { stored } = await one({ attributes: chat({ "gen_ai.system": name }, ["gen_ai.provider.name", "gen_ai.operation.name"]) });
    expect(stored?.provider).toBe(provider);
  });

  it.each(["azure.deepseek", "vertex.maas", "vertex.xai", "amazon-bedrock", "openai-compatible.chat"])(
    "the AI SDK's %s (another vendor's models) is rejected, not stored as one of the three",
    async (name) => {
      const { stored, answer } = await one({ attributes: chat({ "gen_ai.system": name }, ["gen_ai.provider.name"]) });
      expect(stored).toBeUndefined();
      expect(answer.response?.partialSuccess?.errorMessage).toContain(`provider ${JSON.stringify(name)} is not supported`);
    },
  );

  it("the older gen_ai.system works too", async () => {
    const { stored } = await one({ attributes: chat({ "gen_ai.system": "anthropic" }, ["gen_ai.provider.name"]) });
    expect(stored?.provider).toBe("anthropic");
  });

  it("another provider is rejected in partial_success with its name; the rest of the Export is stored", async () => {
    const good = genAiSpan();
    const bad = genAiSpan({ attributes: chat({ "gen_ai.provider.name": "aws.bedrock" }) });
    const answer = await postExport(service.url, key, exportOf([bad, good]));
    expect(answer.status).toBe(200);
    expect(Number(answer.response?.partialSuccess?.rejectedSpans)).toBe(1);
    expect(answer.response?.partialSuccess?.errorMessage).toBe(
      `span ${hex(bad.spanId)}: provider "aws.bedrock" is not supported (openai, anthropic or gemini)`,
    );
    const ids = (await storedOtlp(service.store, accountId)).map((t) => t.otlpSpanId);
    expect(ids).toContain(hex(good.spanId));
    expect(ids).not.toContain(hex(bad.spanId));
  });
});

describe("model, tokens, latency", () => {
  it("model: the response model, else the request model", async () => {
    expect((await one({ attributes: chat() })).stored?.model).toBe("gpt-4o-mini-2024-07-18");
    expect((await one({ attributes: chat({}, ["gen_ai.response.model"]) })).stored?.model).toBe("gpt-4o-mini");
  });

  it("tokens: input and output, with cache reads, cache writes and reasoning as parts of them", async () => {
    const { stored } = await one({
      attributes: chat({
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-sonnet-4-5",
        "gen_ai.response.model": "claude-sonnet-4-5-20250929",
        "gen_ai.usage.input_tokens": 2234,
        "gen_ai.usage.output_tokens": 567,
        "gen_ai.usage.cache_read.input_tokens": 900,
        "gen_ai.usage.cache_creation.input_tokens": 100,
      }),
    });
    expect(stored).toMatchObject({ tokensIn: 2234, tokensOut: 567, tokensCachedIn: 900, tokensCacheWrite: 100 });
    const reasoning = await one({ attributes: chat({ "gen_ai.usage.reasoning_tokens": 300 }) });
    expect(reasoning.stored).toMatchObject({ tokensIn: 1200, tokensOut: 350, tokensReasoning: 300 });
    const gemini = await one({
      attributes: chat({
        "gen_ai.provider.name": "gemini",
        "gen_ai.response.model": "gemini-2.5-flash",
        "gen_ai.usage.reasoning.output_tokens": 77,
      }),
    });
    expect(gemini.stored?.tokensReasoning).toBe(77);
  });

  it("the anthropic SDK's cache_write.input_tokens is a cache write too", async () => {
    const { stored } = await one({ attributes: chat({ "gen_ai.usage.cache_write.input_tokens": 100 }) });
    expect(stored?.tokensCacheWrite).toBe(100);
  });

  it("the older prompt_tokens and completion_tokens", async () => {
    const { stored } = await one({
      attributes: chat({ "gen_ai.usage.prompt_tokens": 11, "gen_ai.usage.completion_tokens": 22 }, [
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
      ]),
    });
    expect(stored).toMatchObject({ tokensIn: 11, tokensOut: 22 });
  });

  it("input tokens reported without the cache (cache parts exceed them) get the cache parts added: tokens_in counts every input token", async () => {
    const { stored } = await one({
      attributes: chat({
        "gen_ai.provider.name": "anthropic",
        "gen_ai.usage.input_tokens": 34,
        "gen_ai.usage.cache_read.input_tokens": 9000,
        "gen_ai.usage.cache_creation.input_tokens": 1000,
      }),
    });
    expect(stored).toMatchObject({ tokensIn: 10034, tokensCachedIn: 9000, tokensCacheWrite: 1000 });
  });

  it("token counts as doubles or numeric strings are read; a negative or fractional count rejects the span", async () => {
    expect(
      (await one({ attributes: chat({ "gen_ai.usage.input_tokens": { double: 5 }, "gen_ai.usage.output_tokens": "7" }) })).stored,
    ).toMatchObject({
      tokensIn: 5,
      tokensOut: 7,
    });
    const bad = await one({ attributes: chat({ "gen_ai.usage.output_tokens": -3 }) });
    expect(bad.stored).toBeUndefined();
    expect(bad.answer.response?.partialSuccess?.errorMessage).toBe(
      `span ${hex(bad.span.spanId)}: gen_ai.usage.output_tokens: must be a whole number from 0 to 2147483647`,
    );
  });

  it("latency is end minus start in ms; time to first chunk (seconds) is ttft_ms", async () => {
    const { stored } = await one({ durationMs: 1234.4, attributes: chat({ "gen_ai.response.time_to_first_chunk": { double: 0.0386 } }) });
    expect(stored).toMatchObject({ latencyMs: 1234, ttftMs: 39 });
  });

  it("OpenLIT's gen_ai.server.time_to_first_token (seconds) is ttft_ms, at most the latency", async () => {
    const first = await one({ durationMs: 900, attributes: chat({ "gen_ai.server.time_to_first_token": { double: 0.2514 } }) });
    expect(first.stored?.ttftMs).toBe(251);
    const late = await one({ durationMs: 900, attributes: chat({ "gen_ai.server.time_to_first_token": 3 }) });
    expect(late.stored?.ttftMs).toBe(900);
  });

  it("an embeddings span without output tokens has 0 of them", async () => {
    const { stored } = await one({
      attributes: chat({ "gen_ai.operation.name": "embeddings", "gen_ai.request.model": "text-embedding-3-small" }, [
        "gen_ai.usage.output_tokens",
        "gen_ai.response.model",
      ]),
    });
    expect(stored).toMatchObject({ model: "text-embedding-3-small", tokensIn: 1200, tokensOut: 0 });
  });

  it("a span without any model is rejected with the contract's words", async () => {
    const { stored, answer, span } = await one({ attributes: chat({}, ["gen_ai.request.model", "gen_ai.response.model"]) });
    expect(stored).toBeUndefined();
    expect(answer.response?.partialSuccess?.errorMessage).toBe(`span ${hex(span.spanId)}: model: is required`);
  });
});

describe("status and error text", () => {
  it("status UNSET or OK is a success", async () => {
    expect((await one({})).stored).toMatchObject({ status: "success" });
    expect((await one({ status: { code: Status_StatusCode.OK } })).stored?.status).toBe("success");
  });

  it("status ERROR: the status message", async () => {
    const { stored } = await one({
      status: { code: Status_StatusCode.ERROR, message: "Error code: 429 - rate limited" },
      attributes: chat({ "error.type": "RateLimitError" }),
    });
    expect(stored).toMatchObject({ status: "error", error: "Error code: 429 - rate limited" });
  });

  it("error.type alone makes an error, and is its text", async () => {
    expect((await one({ attributes: chat({ "error.type": "overloaded_error" }) })).stored).toMatchObject({
      status: "error",
      error: "overloaded_error",
    });
  });

  it("else the exception event's message", async () => {
    const { stored } = await one({ status: { code: Status_StatusCode.ERROR }, exceptionMessage: "Connection reset by peer" });
    expect(stored).toMatchObject({ status: "error", error: "Connection reset by peer" });
  });

  it("a long error text is cut to 4,096 characters", async () => {
    const { stored } = await one({ status: { code: Status_StatusCode.ERROR, message: "é".repeat(5000) } });
    expect(stored?.error).toBe("é".repeat(4096));
  });
});

describe("kept on the trace", () => {
  it("the OTLP ids, service.name, source and the server's price", async () => {
    const traceId = newTraceId();
    const parentSpanId = newSpanId();
    const { stored, span } = await one({ traceId, parentSpanId }, { "service.name": "checkout-api" });
    const cost = serverCost({ provider: "openai", model: "gpt-4o-mini-2024-07-18", tokensIn: 1200, tokensOut: 350 });
    expect(cost).toBeGreaterThan(0);
    expect(stored).toMatchObject({
      otlpTraceId: hex(traceId),
      otlpSpanId: hex(span.spanId),
      otlpParentSpanId: hex(parentSpanId),
      serviceName: "checkout-api",
      source: TraceSource.OTLP,
      priceCheck: PriceCheck.SERVER,
      costUsd: cost,
      serverCostUsd: cost,
    });
    expect(stored?.otlpTraceId).toMatch(/^[0-9a-f]{32}$/);
  });

  it("OpenAI's response service_tier is the trace's, and the call is priced at that tier's rates", async () => {
    const { stored } = await one({ attributes: chat({ "openai.response.service_tier": "flex", "gen_ai.response.model": "gpt-5.4" }) });
    const cost = serverCost({ provider: "openai", model: "gpt-5.4", tokensIn: 1200, tokensOut: 350, serviceTier: "flex" });
    expect(cost).toBeLessThan(serverCost({ provider: "openai", model: "gpt-5.4", tokensIn: 1200, tokensOut: 350 })!);
    expect(stored).toMatchObject({ serviceTier: "flex", costUsd: cost, priceCheck: PriceCheck.SERVER });
    // "default" is the standard tier: not stored, standard rates.
    const standard = await one({ attributes: chat({ "gen_ai.openai.response.service_tier": "default" }) });
    expect(standard.stored?.serviceTier).toBeUndefined();
  });

  it("audio tokens (the registry's modality breakdown, or the flat names) and gen_ai.response.service_tier are stored and priced at their rates", async () => {
    const audio = { "gen_ai.response.model": "gpt-audio", "gen_ai.usage.audio.input_tokens": 1000, "gen_ai.usage.output_audio_tokens": 300 };
    const { stored } = await one({ attributes: chat(audio) });
    const usage = { provider: "openai", model: "gpt-audio", tokensIn: 1200, tokensOut: 350, tokensAudioIn: 1000, tokensAudioOut: 300 };
    expect(serverCost(usage)).toBe((200 * 2.5 + 1000 * 32 + 50 * 10 + 300 * 64) / 1e6);
    expect(stored).toMatchObject({ tokensAudioIn: 1000, tokensAudioOut: 300, costUsd: serverCost(usage), priceCheck: PriceCheck.SERVER });
    // More audio than the uncached input or the output is held to them (the contract's rule), not rejected.
    const over = await one({ attributes: chat({ ...audio, "gen_ai.usage.cache_read.input_tokens": 600, "gen_ai.usage.output_audio_tokens": 999 }) });
    expect(over.stored).toMatchObject({ tokensAudioIn: 600, tokensAudioOut: 350 });
    const tiered = await one({ attributes: chat({ "gen_ai.response.service_tier": "priority", "gen_ai.response.model": "gpt-5.4" }) });
    expect(tiered.stored).toMatchObject({ serviceTier: "priority", costUsd: serverCost({ provider: "openai", model: "gpt-5.4", tokensIn: 1200, tokensOut: 350, serviceTier: "priority" }) });
  });

  it("a model the price table does not know is stored unpriced, at cost 0", async () => {
    const { stored } = await one({ attributes: chat({ "gen_ai.response.model": "gpt-nonexistent-9" }) });
    expect(stored).toMatchObject({ model: "gpt-nonexistent-9", costUsd: 0, priceCheck: PriceCheck.UNPRICED });
    expect(stored?.serverCostUsd).toBeUndefined();
  });

  it("attribution: user.id, session.id, gen_ai.conversation.id, deployment.environment(.name), service.name and allow-listed attributes", async () => {
    const { stored } = await one(
      {
        attributes: chat({ "user.id": "cust_42", "session.id": "sess_1", "app.feature": "summarise", "tenant.tier": 3, "not.listed": "x" }),
      },
      { "service.name": "billing", "deployment.environment.name": "staging" },
    );
    expect(stored).toMatchObject({
      userId: "cust_42",
      sessionId: "sess_1",
      environment: "staging",
      metadata: { service: "billing", "app.feature": "summarise", "tenant.tier": "3" },
    });
    const older = await one({ attributes: chat({ "gen_ai.conversation.id": "conv_9", "deployment.environment": "production" }) });
    expect(older.stored).toMatchObject({ sessionId: "conv_9", environment: "production" });
  });
});

describe("the Vercel AI SDK's spans (ai.*)", () => {
  // As `ai` 6 writes them (test/otlp-interop/ai-sdk.test.ts runs the real package).
  const inner = (extra: Record<string, AttributeValue> = {}): Record<string, AttributeValue> => ({
    "ai.operationId": "ai.generateText.doGenerate",
    "ai.model.provider": "anthropic.messages",
    "ai.model.id": "claude-haiku-4-5",
    "gen_ai.system": "anthropic.messages",
    "gen_ai.request.model": "claude-haiku-4-5",
    "gen_ai.response.model": "claude-haiku-4-5-20251001",
    "gen_ai.response.id": `msg_${hex(newSpanId())}`,
    "ai.usage.inputTokens": 1300,
    "ai.usage.inputTokenDetails.noCacheTokens": 100,
    "ai.usage.inputTokenDetails.cacheReadTokens": 900,
    "ai.usage.inputTokenDetails.cacheWriteTokens": 300,
    "ai.usage.outputTokens": 50,
    "ai.usage.cachedInputTokens": 900,
    "gen_ai.usage.input_tokens": 1300,
    "gen_ai.usage.output_tokens": 50,
    ...extra,
  });

  it("the inner doGenerate span is the call, with cache reads and writes; the outer ai.generateText span is not stored", async () => {
    const traceId = newTraceId();
    const outerId = newSpanId();
    const outer = genAiSpan({
      name: "ai.generateText",
      traceId,
      spanId: outerId,
      attributes: {
        "ai.operationId": "ai.generateText",
        "ai.model.provider": "anthropic.messages",
        "ai.model.id": "claude-haiku-4-5",
        "ai.usage.inputTokens": 1300,
        "ai.usage.outputTokens": 50,
      },
    });
    const call = genAiSpan({ name: "ai.generateText.doGenerate", traceId, parentSpanId: outerId, attributes: inner() });
    const answer = await postExport(service.url, key, exportOf([call, outer], undefined, "ai"));
    expect(answer.response?.partialSuccess).toBeUndefined();
    const stored = (await storedOtlp(service.store, accountId)).filter((t) => t.otlpTraceId === hex(traceId));
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({
      otlpSpanId: hex(call.spanId),
      provider: "anthropic",
      model: "claude-haiku-4-5-20251001",
      tokensIn: 1300,
      tokensOut: 50,
      tokensCachedIn: 900,
      tokensCacheWrite: 300,
      status: "success",
    });
  });

  it("usage from ai.usage.* alone (no gen_ai.usage), reasoning, the model from ai.response.model and the stream's msToFirstChunk", async () => {
    const { stored } = await one({
      durationMs: 1500,
      attributes: {
        "ai.operationId": "ai.streamText.doStream",
        "ai.model.provider": "openai.responses",
        "ai.model.id": "o3",
        "ai.response.model": "o3-2025-04-16",
        "ai.usage.inputTokens": 2006,
        "ai.usage.cachedInputTokens": 1920,
        "ai.usage.outputTokens": 420,
        "ai.usage.outputTokenDetails.reasoningTokens": 256,
        "ai.response.msToFirstChunk": { double: 99.5 },
      },
    });
    expect(stored).toMatchObject({
      provider: "openai",
      model: "o3-2025-04-16",
      tokensIn: 2006,
      tokensCachedIn: 1920,
      tokensOut: 420,
      tokensReasoning: 256,
      ttftMs: 100,
    });
  });

  it("a failed call (no usage, no gen_ai.operation.name) is stored as an error with no tokens", async () => {
    const { stored } = await one({
      status: { code: Status_StatusCode.ERROR, message: "Overloaded" },
      exceptionMessage: "Overloaded",
      attributes: {
        "ai.operationId": "ai.generateText.doGenerate",
        "ai.model.provider": "openai.chat",
        "ai.model.id": "gpt-4o",
        "gen_ai.system": "openai.chat",
        "gen_ai.request.model": "gpt-4o",
      },
    });
    expect(stored).toMatchObject({ provider: "openai", model: "gpt-4o", status: "error", error: "Overloaded", tokensIn: 0, tokensOut: 0 });
  });

  it("tool-call and other AI SDK spans are skipped, even with a provider and usage", async () => {
    const before = (await storedOtlp(service.store, accountId)).length;
    const spans = ["ai.toolCall", "ai.streamText", "ai.generateObject", "ai.embed"].map((operation) =>
      genAiSpan({ attributes: inner({ "ai.operationId": operation }) }),
    );
    const answer = await postExport(service.url, key, exportOf(spans));
    expect(answer.response?.partialSuccess).toBeUndefined();
    expect((await storedOtlp(service.store, accountId)).length).toBe(before);
  });
});

describe("string bounds (docs/otlp.md): stored bytes follow the calls, not the padding", () => {
  const mega = "x".repeat(1024 * 1024);

  it("service.name and metadata are cut; error text is cut; a long model, user or session rejects the span", async () => {
    const { stored } = await one(
      {
        status: { code: Status_StatusCode.ERROR, message: mega },
        attributes: chat({ "app.feature": mega }),
      },
      { "service.name": mega },
    );
    expect(stored?.serviceName).toBe("x".repeat(256));
    expect(stored?.metadata).toEqual({ service: "x".repeat(256), "app.feature": "x".repeat(512) });
    expect(stored?.error).toHaveLength(4096);
    for (const [attribute, reason] of [
      ["gen_ai.response.model", "model: must be at most 256 characters"],
      ["user.id", "user_id"],
      ["session.id", "session_id"],
      ["deployment.environment.name", "environment"],
    ] as const) {
      const { stored: none, answer, span } = await one({ attributes: chat({ [attribute]: mega }) });
      expect(none).toBeUndefined();
      expect(answer.response?.partialSuccess?.errorMessage).toContain(`span ${hex(span.spanId)}: ${reason}`);
      expect(answer.body.length).toBeLessThan(2048);
    }
  });

  it("a padded Export (15 MiB of long service name, scope, error, provider and attributes) stores at most a bounded row per call", async () => {
    // Committing 15 MiB of rows took longer than the default 5 s wait at load 15-25 (a 503): this test is about the bytes stored.
    const padded = await startTestService({ otlpMetadataAttributes: "app.feature", writeTimeoutMs: 60_000 });
    const { key: paddedKey, accountId: paddedAccount } = await padded.createKey("pro");
    const pad = "p".repeat(31_000);
    const spans = Array.from({ length: 100 }, (_, i) =>
      genAiSpan({
        status: { code: Status_StatusCode.ERROR, message: pad },
        exceptionMessage: pad,
        attributes: chat({ "app.feature": pad, "gen_ai.prompt": pad, "gen_ai.response.id": `${pad}${i}` }),
      }),
    );
    const rejected = genAiSpan({ attributes: chat({ "gen_ai.provider.name": pad }) });
    const request = exportOf([...spans, rejected], { "service.name": pad, "user.id": "u" }, pad);
    const body = (await import("@bufbuild/protobuf")).toBinary(
      (await import("../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js")).ExportTraceServiceRequestSchema,
      request,
    );
    expect(body.length).toBeGreaterThan(14 * 1024 * 1024); // under the default OTLP_MAX_BODY_BYTES (16 MiB)
    const before = directoryBytes(padded.config.dataDir);
    const answer = await postExport(padded.url, paddedKey, body);
    expect(answer.status).toBe(200);
    expect(Number(answer.response?.partialSuccess?.rejectedSpans)).toBe(1);
    expect(answer.body.length).toBeLessThan(1024);
    const stored = await storedOtlp(padded.store, paddedAccount);
    expect(stored).toHaveLength(100);
    // Each row holds at most the bounded strings: 256 (service) twice, 512 (metadata), 4,096 (error), ids.
    for (const trace of stored) {
      expect(trace.serviceName.length + trace.metadata.service!.length + trace.metadata["app.feature"]!.length + trace.error!.length).toBe(
        256 + 256 + 512 + 4096,
      );
    }
    const grown = directoryBytes(padded.config.dataDir) - before;
    // Rows of about 6 KiB, their indexes and the write-ahead log: far from the 16 MiB sent.
    expect(grown).toBeLessThan(100 * 24 * 1024);
  });
});

/** The bytes of every file in a directory (the embedded store's database and its write-ahead log). */
function directoryBytes(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) {
    const stat = statSync(join(dir, name));
    if (stat.isFile()) total += stat.size;
  }
  return total;
}
