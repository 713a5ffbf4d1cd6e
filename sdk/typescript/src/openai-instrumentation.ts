import type { Instrumentation } from "./instrumentation.js";
import { billedServiceTier } from "./price-table.js";
import { patchMethod } from "./patch-method.js";
import { type ProviderCall, startCall } from "./provider-call.js";
import { dig, readCount, readString } from "./read-json.js";
import { type ResponseReader, traceStainlessCall } from "./trace-stainless-call.js";

/**
 * Traces `chat.completions.create`, `responses.create` and `embeddings.create`
 * of the `openai` package. Its helpers (`stream()`, `parse()`, `runTools()`)
 * and AzureOpenAI all go through these methods.
 */
export const openaiInstrumentation: Instrumentation = {
  packageName: "openai",
  patch(moduleExports, recorder) {
    const undo = [
      patchMethod(
        dig(moduleExports, "OpenAI", "Chat", "Completions", "prototype"),
        "create",
        (create) =>
          function (this: unknown, body: unknown, ...rest: unknown[]) {
            const { call, params, refused } = startCall(recorder, "openai", body);
            if (refused) return refused;
            if (!call) return create.call(this, params, ...rest);
            const streamed = dig(params, "stream") === true;
            const usage = streamed ? streamUsage(this, params) : "given";
            if (usage === "unknown") call.usageHint = usageHint(this);
            const sent = usage === "ask" ? withUsageRequested(params) : params;
            const reader = usage === "ask" ? chatWithHiddenUsage : chatReader;
            return traceStainlessCall(call, streamed, reader, () => create.call(this, sent, ...rest));
          },
      ),
      patchMethod(
        dig(moduleExports, "OpenAI", "Responses", "prototype"),
        "create",
        (create) =>
          function (this: unknown, body: unknown, ...rest: unknown[]) {
            const { call, params, refused } = startCall(recorder, "openai", body);
            if (refused) return refused;
            if (!call) return create.call(this, params, ...rest);
            return traceStainlessCall(call, dig(params, "stream") === true, responsesReader, () =>
              create.call(this, params, ...rest),
            );
          },
      ),
      patchMethod(
        dig(moduleExports, "OpenAI", "Embeddings", "prototype"),
        "create",
        (create) =>
          function (this: unknown, body: unknown, ...rest: unknown[]) {
            const { call, params, refused } = startCall(recorder, "openai", body);
            if (refused) return refused;
            if (!call) return create.call(this, params, ...rest);
            return traceStainlessCall(call, false, embeddingsReader, () => create.call(this, params, ...rest));
          },
      ),
    ];
    return undo.filter((u) => u !== undefined);
  },
};

/**
 * How a streamed chat completion's usage is had. OpenAI sends it only when
 * asked with `stream_options.include_usage`: "given" when the caller decided
 * (either way), "ask" when we add the option (OpenAI and Azure OpenAI, which
 * both take it), "unknown" for other OpenAI-compatible servers, which may
 * reject the option: their streams carry usage only if the caller asks.
 */
export function streamUsage(completions: unknown, body: unknown): "given" | "ask" | "unknown" {
  if (dig(body, "stream_options", "include_usage") !== undefined) return "given";
  return takesIncludeUsage(dig(completions, "_client")) ? "ask" : "unknown";
}

const AZURE_HOSTS = /\.(openai\.azure\.com|cognitiveservices\.azure\.com|services\.ai\.azure\.com)$/;

function takesIncludeUsage(client: unknown): boolean {
  // AzureOpenAI clients carry their API version, whatever their endpoint's name.
  if (typeof dig(client, "apiVersion") === "string") return true;
  const host = hostOf(client);
  return host === "api.openai.com" || (host !== undefined && AZURE_HOSTS.test(host));
}

function hostOf(client: unknown): string | undefined {
  try {
    return new URL(String(dig(client, "baseURL"))).hostname;
  } catch {
    return undefined;
  }
}

function usageHint(completions: unknown) {
  const host = hostOf(dig(completions, "_client")) ?? "an OpenAI-compatible server";
  return {
    key: `stream-usage:${host}`,
    message:
      `streamed chat completions from ${host} carry no usage unless asked, so their traces have 0 tokens and ` +
      `metadata calltrace.usage "missing": pass stream_options: { include_usage: true } if the server supports it`,
  };
}

// A copy: the caller's request object is never changed.
function withUsageRequested(body: unknown): object {
  const streamOptions = dig(body, "stream_options");
  return { ...(body as object), stream_options: { ...(streamOptions as object | undefined), include_usage: true } };
}

// prompt_tokens counts every input token, the cached ones too.
function readChatUsage(call: ProviderCall, body: unknown): void {
  const usage = dig(body, "usage");
  call.report({
    model: readString(dig(body, "model")),
    tokensIn: readCount(dig(usage, "prompt_tokens")),
    tokensOut: readCount(dig(usage, "completion_tokens")),
    tokensCachedIn: readCount(dig(usage, "prompt_tokens_details", "cached_tokens")),
    tokensReasoning: readCount(dig(usage, "completion_tokens_details", "reasoning_tokens")),
    billing: {
      serviceTier: billedServiceTier(dig(body, "service_tier")),
      tokensAudioIn: readCount(dig(usage, "prompt_tokens_details", "audio_tokens")),
      tokensAudioOut: readCount(dig(usage, "completion_tokens_details", "audio_tokens")),
    },
  });
}

function readChatChunk(call: ProviderCall, chunk: unknown): void {
  readChatUsage(call, chunk);
  const choices = dig(chunk, "choices");
  if (Array.isArray(choices) && choices.some((choice) => hasOutput(dig(choice, "delta")))) call.firstToken();
}

// The first chunk only says role "assistant", with content "": no output yet.
function hasOutput(delta: unknown): boolean {
  if (delta === null || typeof delta !== "object") return false;
  for (const [key, value] of Object.entries(delta)) {
    if (key === "role" || value === null || value === undefined || value === "") continue;
    if (Array.isArray(value) && value.length === 0) continue;
    return true;
  }
  return false;
}

const chatReader: ResponseReader = {
  response: readChatUsage,
  event(call, chunk) {
    readChatChunk(call, chunk);
    return true;
  },
};

// When we asked for usage, its extra chunk (no choices, only usage) is hidden,
// so the caller sees exactly the stream it asked for.
const chatWithHiddenUsage: ResponseReader = {
  response: readChatUsage,
  event(call, chunk) {
    readChatChunk(call, chunk);
    const choices = dig(chunk, "choices");
    return !(dig(chunk, "usage") && Array.isArray(choices) && choices.length === 0);
  },
};

function readResponse(call: ProviderCall, response: unknown): void {
  const usage = dig(response, "usage");
  call.report({
    model: readString(dig(response, "model")),
    tokensIn: readCount(dig(usage, "input_tokens")),
    tokensOut: readCount(dig(usage, "output_tokens")),
    tokensCachedIn: readCount(dig(usage, "input_tokens_details", "cached_tokens")),
    tokensReasoning: readCount(dig(usage, "output_tokens_details", "reasoning_tokens")),
    billing: {
      serviceTier: billedServiceTier(dig(response, "service_tier")),
      webSearchRequests: webSearches(response),
    },
  });
  if (dig(response, "status") === "failed") {
    call.reportFailure(readString(dig(response, "error", "message")) ?? "response failed");
  }
}

/** The web searches a response ran (its `web_search_call` output items), once it has output. */
function webSearches(response: unknown): number | undefined {
  const output = dig(response, "output");
  if (!Array.isArray(output) || output.length === 0) return undefined;
  const searches = output.filter((item) => dig(item, "type") === "web_search_call").length;
  return searches === 0 ? undefined : searches;
}

// An embedding's usage counts input only.
const embeddingsReader: ResponseReader = {
  response(call, body) {
    call.report({
      model: readString(dig(body, "model")),
      tokensIn: readCount(dig(body, "usage", "prompt_tokens")),
      tokensOut: 0,
    });
  },
  event: () => true,
};

const responsesReader: ResponseReader = {
  response: readResponse,
  event(call, event) {
    // response.created / in_progress / completed / incomplete / failed carry
    // the response; only the last ones carry usage.
    const response = dig(event, "response");
    if (response) readResponse(call, response);
    const type = dig(event, "type");
    // Output text, reasoning summaries, tool-call arguments: all arrive as deltas.
    if (typeof type === "string" && type.endsWith(".delta")) call.firstToken();
    if (type === "error") {
      call.reportFailure(readString(dig(event, "message")) ?? readString(dig(event, "code")) ?? "stream error");
    }
    return true;
  },
};
