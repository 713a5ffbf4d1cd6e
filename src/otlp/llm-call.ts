import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { createHash } from "node:crypto";
import { type Trace, TraceSource } from "../../gen/calltrace/v1/trace_pb.js";
import { Status_StatusCode } from "../../gen/opentelemetry/proto/trace/v1/trace_pb.js";
import type { CallSubmission } from "../ingest/ingest-pipeline.js";
import { serverPricing } from "../pricing/custom-prices.js";
import { billedServiceTier, type PricedUsage } from "../pricing/server-prices.js";
import { calltraceProvider } from "./genai-provider.js";
import type { Attributes, OtlpSpan } from "./otlp-export.js";
import { countOf, SpanRejection, textOf } from "./attribute-values.js";
import { addAttribution } from "./call-attribution.js";
import { bounds, cut } from "./string-bounds.js";

/** What a span is to calltrace: not an LLM call (skipped silently), an LLM call, or one it cannot store. */
export type SpanVerdict = { kind: "skip" } | { kind: "call"; call: SpanCall } | { kind: "reject"; reason: string };

/** An LLM call read off a span, with what it takes to tell whether another span reports the same call. */
export interface SpanCall {
  submission: CallSubmission;
  /** The instrumentation scope that made the span. */
  scope: string;
  startNs: bigint;
  endNs: bigint;
  /** The provider's id of the response (`gen_ai.response.id`), when the span has one. */
  responseId: string | undefined;
}

/** The resource a span came from, read once per ResourceSpans. */
export interface SpanResource {
  attributes: Attributes;
  serviceName: string;
}

export interface LlmCallOptions {
  /** The server's price of a call made at `at`: the project's custom price, else the catalog's (undefined: unpriced). */
  price: (usage: PricedUsage, at: Date) => number | undefined;
  /** Span attributes kept as metadata (OTLP_METADATA_ATTRIBUTES). */
  metadataAttributes: readonly string[];
}

/** `gen_ai.operation.name` values that are one call to a model (not agent or tool spans). */
const callOperations = new Set(["chat", "text_completion", "generate_content", "embeddings", "completion", "embedding", "responses"]);

/**
 * The Vercel AI SDK's spans (`ai.operationId`): one per provider call, inside the span of the
 * function the application called (`ai.generateText` around one `ai.generateText.doGenerate` per
 * step and retry). The inner spans are the calls, failed ones included (they carry no usage);
 * every other AI SDK span (the outer ones, tool calls) is skipped, or each call would count twice.
 */
const aiSdkCallOperations = new Set([
  "ai.generateText.doGenerate",
  "ai.streamText.doStream",
  "ai.generateObject.doGenerate",
  "ai.streamObject.doStream",
  "ai.embed.doEmbed",
  "ai.embedMany.doEmbed",
]);

const operationNames = ["gen_ai.operation.name", "llm.request.type"];
// The AI SDK sets gen_ai.system on its inner spans only; ai.model.provider is on every one.
const providerNames = ["gen_ai.provider.name", "gen_ai.system", "ai.model.provider"];
const modelNames = ["gen_ai.response.model", "gen_ai.request.model", "ai.response.model", "ai.model.id"];
const inputNames = [
  "gen_ai.usage.input_tokens",
  "gen_ai.usage.prompt_tokens",
  "llm.usage.prompt_tokens",
  "ai.usage.inputTokens",
  "ai.usage.promptTokens",
  "ai.usage.tokens",
];
const outputNames = [
  "gen_ai.usage.output_tokens",
  "gen_ai.usage.completion_tokens",
  "llm.usage.completion_tokens",
  "ai.usage.outputTokens",
  "ai.usage.completionTokens",
];
const cacheReadNames = [
  "gen_ai.usage.cache_read.input_tokens",
  "gen_ai.usage.cache_read_input_tokens",
  "gen_ai.usage.input_tokens.cached",
  "gen_ai.usage.input_tokens_details.cached_tokens",
  "ai.usage.inputTokenDetails.cacheReadTokens",
  "ai.usage.cachedInputTokens",
];
const cacheWriteNames = [
  "gen_ai.usage.cache_creation.input_tokens",
  "gen_ai.usage.cache_write.input_tokens",
  "gen_ai.usage.cache_creation_input_tokens",
  "gen_ai.usage.input_tokens.cache_write",
  "ai.usage.inputTokenDetails.cacheWriteTokens",
];
const usageNames = [...inputNames, ...outputNames];
// OpenAI's response service_tier, as the semantic conventions name it (older and newer).
const serviceTierNames = ["openai.response.service_tier", "gen_ai.openai.response.service_tier", "gen_ai.response.service_tier"];
// Audio parts of the input and output: the GenAI registry's modality breakdown, and the flat names some instrumentations use.
const audioInNames = ["gen_ai.usage.audio.input_tokens", "gen_ai.usage.input_audio_tokens"];
const audioOutNames = ["gen_ai.usage.audio.output_tokens", "gen_ai.usage.output_audio_tokens"];
const reasoningNames = [
  "gen_ai.usage.reasoning.output_tokens",
  "gen_ai.usage.reasoning_tokens",
  "gen_ai.usage.output_tokens.reasoning",
  "gen_ai.usage.output_tokens_details.reasoning_tokens",
  "llm.usage.reasoning_tokens",
  "ai.usage.outputTokenDetails.reasoningTokens",
  "ai.usage.reasoningTokens",
];

const int32Max = 2_147_483_647;

/**
 * Maps one span (the table in docs/otlp.md). A span is an LLM call when its operation is a model
 * call, or when it names a provider and carries usage; its trace is built with the contract's
 * fields (validated later by the pipeline like any other) and priced by the server.
 */
export function llmCallOf(span: OtlpSpan, scope: string, resource: SpanResource, options: LlmCallOptions): SpanVerdict {
  const attributes = span.attributes;
  if (!isCall(attributes)) return { kind: "skip" };

  const { traceId, spanId, parentSpanId } = span;
  const where = `span ${cut(spanId, 16) || "(no id)"}`;
  if (traceId.length !== 32 || spanId.length !== 16 || (parentSpanId.length !== 0 && parentSpanId.length !== 16))
    return { kind: "reject", reason: `${where}: trace, span and parent span ids must be 16, 8 and 8 (or 0) bytes` };
  const providerName = textOf(attributes, providerNames);
  if (providerName === undefined) return { kind: "reject", reason: `${where}: no gen_ai.provider.name (or gen_ai.system)` };
  const provider = calltraceProvider(providerName);
  if (provider === undefined) {
    const named = JSON.stringify(cut(providerName, 64));
    return { kind: "reject", reason: `${where}: provider ${named} is not supported (openai, anthropic or gemini)` };
  }
  const model = textOf(attributes, modelNames) ?? "";
  // Checked here, before the call is remembered (unpaired-spans.ts), not only by the pipeline's validation.
  if (model.length > bounds.model) return { kind: "reject", reason: `${where}: model: must be at most ${bounds.model} characters` };

  try {
    let tokensIn = countOf(attributes, inputNames) ?? 0;
    const tokensOut = countOf(attributes, outputNames) ?? 0;
    const tokensCachedIn = countOf(attributes, cacheReadNames);
    const tokensCacheWrite = countOf(attributes, cacheWriteNames);
    const tokensReasoning = countOf(attributes, reasoningNames);
    // Audio is part of the uncached input and of the output (the contract's rule); an
    // instrumentation counting cached audio too is held to that.
    const uncachedIn = Math.max(0, tokensIn - (tokensCachedIn ?? 0) - (tokensCacheWrite ?? 0));
    const tokensAudioIn = Math.min(countOf(attributes, audioInNames) ?? 0, uncachedIn);
    const tokensAudioOut = Math.min(countOf(attributes, audioOutNames) ?? 0, tokensOut);
    // tokens_in counts every input token. Anthropic's input_tokens leaves cache reads and writes
    // out, and some instrumentations pass it on as is: when the cache parts exceed the input, add them.
    const cached = (tokensCachedIn ?? 0) + (tokensCacheWrite ?? 0);
    if (cached > tokensIn) tokensIn = Math.min(int32Max, tokensIn + cached);
    const error = errorOf(span, attributes);
    const latencyMs = latencyOf(span);
    const ttftMs = ttftOf(attributes, latencyMs);
    const responseId = textOf(attributes, "gen_ai.response.id");
    const tier = billedServiceTier(textOf(attributes, serviceTierNames));
    const serviceTier = tier === "standard" ? undefined : tier;
    // Priced as of the span's start, the time the call is stored at (a custom price's effective range).
    const calledAt = span.startTimeUnixNano > 0n ? timestampOfNanos(span.startTimeUnixNano) : undefined;
    const at = calledAt ? new Date(Number(span.startTimeUnixNano / 1_000_000n)) : new Date();
    const { costUsd, serverCostUsd, priceCheck } = serverPricing(
      TraceSource.OTLP,
      0,
      options.price(
        { provider, model, tokensIn, tokensOut, tokensCachedIn, tokensCacheWrite, tokensAudioIn, tokensAudioOut, serviceTier },
        at,
      ),
    );
    // A literal rather than create(): this runs for every span, and create() walks the schema.
    const trace: Trace = {
      $typeName: "calltrace.v1.Trace",
      provider,
      model,
      tokensIn,
      tokensOut,
      latencyMs,
      costUsd,
      apiKey: "",
      status: error === undefined ? "success" : "error",
      tags: [],
      metadata: {},
    };
    if (error) trace.error = error;
    if (tokensCachedIn !== undefined) trace.tokensCachedIn = tokensCachedIn;
    if (tokensCacheWrite !== undefined) trace.tokensCacheWrite = tokensCacheWrite;
    if (tokensReasoning !== undefined) trace.tokensReasoning = tokensReasoning;
    if (ttftMs !== undefined) trace.ttftMs = ttftMs;
    if (serviceTier !== undefined) trace.serviceTier = serviceTier;
    // Sent only when they change the price, as the SDKs do.
    if (tokensAudioIn) trace.tokensAudioIn = tokensAudioIn;
    if (tokensAudioOut) trace.tokensAudioOut = tokensAudioOut;
    // The span's start is the time of the call (D58); the pipeline drops it where it is out of bounds.
    if (calledAt) trace.calledAt = calledAt;
    addAttribution(trace, attributes, resource.attributes, options.metadataAttributes);
    const submission: CallSubmission = {
      trace,
      origin: {
        source: TraceSource.OTLP,
        priceCheck,
        ...(serverCostUsd === undefined ? {} : { serverCostUsd }),
        otlpTraceId: traceId,
        otlpSpanId: spanId,
        otlpParentSpanId: span.parentSpanId,
        serviceName: resource.serviceName,
      },
      idempotencyKey: idempotencyKeyOf(provider, responseId, traceId, spanId),
      otlpStartS: Number(span.startTimeUnixNano / 1_000_000_000n),
    };
    return { kind: "call", call: { submission, scope, startNs: span.startTimeUnixNano, endNs: span.endTimeUnixNano, responseId } };
  } catch (error) {
    if (error instanceof SpanRejection) return { kind: "reject", reason: `${where}: ${error.message}` };
    throw error;
  }
}

/**
 * A model call: an AI SDK provider call, a span whose operation is a model call, or (older
 * instrumentations, without an operation name) a span naming a provider and carrying usage.
 */
function isCall(attributes: Attributes): boolean {
  const aiSdkOperation = textOf(attributes, "ai.operationId");
  if (aiSdkOperation !== undefined) return aiSdkCallOperations.has(aiSdkOperation);
  const operation = textOf(attributes, operationNames)?.toLowerCase();
  if (operation !== undefined) return callOperations.has(operation);
  return textOf(attributes, providerNames) !== undefined && usageNames.some((name) => attributes.has(name));
}

/**
 * Stores a call at most once within 24 hours (D14), whichever Export brings it again: a retried
 * Export has the same trace and span ids, and two instrumentations of one call (the anthropic SDK's
 * own span beside OpenLLMetry's) report the same response id.
 */
function idempotencyKeyOf(provider: string, responseId: string | undefined, traceId: string, spanId: string): string {
  if (responseId === undefined) return `otlp:${traceId}:${spanId}`;
  const key = `otlp:${provider}:${responseId}`;
  return key.length <= 128 ? key : `otlp:${provider}:sha256:${createHash("sha256").update(responseId).digest("hex")}`;
}

/** Streams' time to the first chunk, by attribute name, and how many milliseconds one of its units is. */
const ttftNames: [string, number][] = [
  ["gen_ai.response.time_to_first_chunk", 1000],
  ["gen_ai.server.time_to_first_token", 1000], // OpenLIT
  ["ai.response.msToFirstChunk", 1], // the AI SDK
];

/** Streams: the time to the first chunk in whole milliseconds, at most the latency. */
function ttftOf(attributes: Attributes, latencyMs: number): number | undefined {
  for (const [name, msPerUnit] of ttftNames) {
    const value = attributes.get(name);
    const units = value?.case === "doubleValue" || value?.case === "intValue" ? Number(value.value) : Number.NaN;
    if (Number.isFinite(units) && units >= 0) return Math.min(latencyMs, Math.round(units * msPerUnit));
  }
  return undefined;
}

function timestampOfNanos(nanos: bigint): Timestamp {
  return { $typeName: "google.protobuf.Timestamp", seconds: nanos / 1_000_000_000n, nanos: Number(nanos % 1_000_000_000n) };
}

/** End minus start in whole milliseconds; a span that ends before it starts took 0. */
function latencyOf(span: OtlpSpan): number {
  const nanos = span.endTimeUnixNano - span.startTimeUnixNano;
  if (nanos <= 0n) return 0;
  return Math.min(int32Max, Math.round(Number(nanos) / 1e6));
}

/**
 * undefined for a successful call. A failed one (span status ERROR, or `error.type` set) is
 * described by the status message, else `error.type`, else its exception event's message; "" when
 * none says anything.
 */
function errorOf(span: OtlpSpan, attributes: Attributes): string | undefined {
  const errorType = textOf(attributes, "error.type");
  if (span.status?.code !== Status_StatusCode.ERROR && errorType === undefined) return undefined;
  const exception = span.events.find((e) => e.name === "exception");
  const text = span.status?.message || errorType || (exception && textOf(exception.attributes, "exception.message")) || "";
  return cut(text, bounds.error);
}
