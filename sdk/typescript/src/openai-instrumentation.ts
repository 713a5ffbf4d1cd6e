import type { Instrumentation } from "./instrumentation.js";
import { patchMethod } from "./patch-method.js";
import { ProviderCall } from "./provider-call.js";
import { readCount } from "./read-count.js";
import { traceStainlessCall, type ResponseReader } from "./trace-stainless-call.js";

type Body = Record<string, any> | undefined;

/**
 * Traces `chat.completions.create` and `responses.create` of the `openai`
 * package. Its helpers (`stream()`, `parse()`, `runTools()`) and AzureOpenAI
 * all go through these two methods.
 */
export const openaiInstrumentation: Instrumentation = {
  packageName: "openai",
  patch(moduleExports, recorder) {
    const OpenAI = (moduleExports as { OpenAI?: any } | undefined)?.OpenAI;
    const undo = [
      patchMethod(OpenAI?.Chat?.Completions?.prototype ?? {}, "create", (create) =>
        function (this: any, body: Body, ...rest: unknown[]) {
          const call = new ProviderCall(recorder, "openai", body?.model);
          const hideUsage = shouldAskForUsage(this, body);
          const sent = hideUsage ? { ...body, stream_options: { ...body!.stream_options, include_usage: true } } : body;
          const reader = hideUsage ? chatWithHiddenUsage : chatReader;
          return traceStainlessCall(call, body?.stream === true, reader, () => create.call(this, sent, ...rest));
        },
      ),
      patchMethod(OpenAI?.Responses?.prototype ?? {}, "create", (create) =>
        function (this: any, body: Body, ...rest: unknown[]) {
          const call = new ProviderCall(recorder, "openai", body?.model);
          return traceStainlessCall(call, body?.stream === true, responsesReader, () =>
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
export function shouldAskForUsage(completions: { _client?: { baseURL?: unknown } }, body: Body): boolean {
  if (body?.stream !== true || body.stream_options?.include_usage !== undefined) return false;
  try {
    return new URL(String(completions._client?.baseURL)).hostname === "api.openai.com";
  } catch {
    return false;
  }
}

function readChatUsage(call: ProviderCall, body: any): void {
  call.report({
    model: body?.model,
    tokensIn: readCount(body?.usage?.prompt_tokens),
    tokensOut: readCount(body?.usage?.completion_tokens),
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
  event(call, chunk: any) {
    readChatUsage(call, chunk);
    return !(chunk?.usage && Array.isArray(chunk.choices) && chunk.choices.length === 0);
  },
};

function readResponse(call: ProviderCall, response: any): void {
  call.report({
    model: response?.model,
    tokensIn: readCount(response?.usage?.input_tokens),
    tokensOut: readCount(response?.usage?.output_tokens),
  });
  if (response?.status === "failed") call.reportFailure(response.error?.message ?? "response failed");
}

const responsesReader: ResponseReader = {
  response: readResponse,
  event(call, event: any) {
    // response.created / in_progress / completed / incomplete / failed carry
    // the response; only the last ones carry usage.
    if (event?.response) readResponse(call, event.response);
    if (event?.type === "error") call.reportFailure(event.message ?? event.code ?? "stream error");
    return true;
  },
};

