import type { Instrumentation } from "./instrumentation.js";
import { patchMethod } from "./patch-method.js";
import { ProviderCall } from "./provider-call.js";
import { dig, readCount, readString } from "./read-json.js";
import { type ResponseReader, traceStainlessCall } from "./trace-stainless-call.js";

/**
 * Traces `chat.completions.create` and `responses.create` of the `openai`
 * package. Its helpers (`stream()`, `parse()`, `runTools()`) and AzureOpenAI
 * all go through these two methods.
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
            const call = new ProviderCall(recorder, "openai", dig(body, "model"));
            const askForUsage = shouldAskForUsage(this, body);
            const sent = askForUsage ? withUsageRequested(body) : body;
            const reader = askForUsage ? chatWithHiddenUsage : chatReader;
            return traceStainlessCall(call, dig(body, "stream") === true, reader, () =>
              create.call(this, sent, ...rest),
            );
          },
      ),
      patchMethod(
        dig(moduleExports, "OpenAI", "Responses", "prototype"),
        "create",
        (create) =>
          function (this: unknown, body: unknown, ...rest: unknown[]) {
            const call = new ProviderCall(recorder, "openai", dig(body, "model"));
            return traceStainlessCall(call, dig(body, "stream") === true, responsesReader, () =>
              create.call(this, body, ...rest),
            );
          },
      ),
    ];
    return undo.filter((u) => u !== undefined);
  },
};

/**
 * OpenAI sends a streamed chat completion's usage only when asked with
 * `stream_options.include_usage`. We ask when the caller left it unset, and
 * only of OpenAI itself: compatible servers may reject the option.
 */
export function shouldAskForUsage(completions: unknown, body: unknown): boolean {
  if (dig(body, "stream") !== true || dig(body, "stream_options", "include_usage") !== undefined) return false;
  try {
    return new URL(String(dig(completions, "_client", "baseURL"))).hostname === "api.openai.com";
  } catch {
    return false;
  }
}

// A copy: the caller's request object is never changed.
function withUsageRequested(body: unknown): object {
  const streamOptions = dig(body, "stream_options");
  return { ...(body as object), stream_options: { ...(streamOptions as object | undefined), include_usage: true } };
}

function readChatUsage(call: ProviderCall, body: unknown): void {
  call.report({
    model: readString(dig(body, "model")),
    tokensIn: readCount(dig(body, "usage", "prompt_tokens")),
    tokensOut: readCount(dig(body, "usage", "completion_tokens")),
  });
}

const chatReader: ResponseReader = {
  response: readChatUsage,
  event(call, chunk) {
    readChatUsage(call, chunk);
    return true;
  },
};

// When we asked for usage, its extra chunk (no choices, only usage) is hidden,
// so the caller sees exactly the stream it asked for.
const chatWithHiddenUsage: ResponseReader = {
  response: readChatUsage,
  event(call, chunk) {
    readChatUsage(call, chunk);
    const choices = dig(chunk, "choices");
    return !(dig(chunk, "usage") && Array.isArray(choices) && choices.length === 0);
  },
};

function readResponse(call: ProviderCall, response: unknown): void {
  call.report({
    model: readString(dig(response, "model")),
    tokensIn: readCount(dig(response, "usage", "input_tokens")),
    tokensOut: readCount(dig(response, "usage", "output_tokens")),
  });
  if (dig(response, "status") === "failed") {
    call.reportFailure(readString(dig(response, "error", "message")) ?? "response failed");
  }
}

const responsesReader: ResponseReader = {
  response: readResponse,
  event(call, event) {
    // response.created / in_progress / completed / incomplete / failed carry
    // the response; only the last ones carry usage.
    const response = dig(event, "response");
    if (response) readResponse(call, response);
    if (dig(event, "type") === "error") {
      call.reportFailure(readString(dig(event, "message")) ?? readString(dig(event, "code")) ?? "stream error");
    }
    return true;
  },
};
