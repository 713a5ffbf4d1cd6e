import type { Instrumentation } from "./instrumentation.js";
import { billedServiceTier } from "./price-table.js";
import { patchMethod } from "./patch-method.js";
import { type ProviderCall, startCall } from "./provider-call.js";
import { dig, readCount, readString } from "./read-json.js";
import { type ResponseReader, traceStainlessCall } from "./trace-stainless-call.js";

/**
 * Traces `messages.create` and `beta.messages.create` of
 * `@anthropic-ai/sdk`; `messages.stream()` and `messages.parse()` go through
 * `create`.
 */
export const anthropicInstrumentation: Instrumentation = {
  packageName: "@anthropic-ai/sdk",
  patch(moduleExports, recorder) {
    const Anthropic = dig(moduleExports, "Anthropic") ?? dig(moduleExports, "default");
    const targets = [dig(Anthropic, "Messages", "prototype"), dig(Anthropic, "Beta", "Messages", "prototype")];
    return targets
      .map((target) =>
        patchMethod(
          target,
          "create",
          (create) =>
            function (this: unknown, body: unknown, ...rest: unknown[]) {
              const { call, params, refused } = startCall(recorder, "anthropic", body);
              if (refused) return refused;
              if (!call) return create.call(this, params, ...rest);
              return traceStainlessCall(call, dig(params, "stream") === true, messageReader, () =>
                create.call(this, params, ...rest),
              );
            },
        ),
      )
      .filter((undo) => undo !== undefined);
  },
};

// Anthropic's input_tokens leaves out the cache reads and writes, which are
// billed as input too (at their own rates): tokens_in is the sum of the three.
// Thinking is part of output_tokens and not counted apart.
// Cache writes are split by lifetime in cache_creation (5 minutes, 1 hour), which
// are billed at different rates; web searches are billed per request.
function readUsage(call: ProviderCall, usage: unknown): void {
  call.report({
    tokensInUncached: readCount(dig(usage, "input_tokens")),
    tokensCacheWrite: readCount(dig(usage, "cache_creation_input_tokens")),
    tokensCachedIn: readCount(dig(usage, "cache_read_input_tokens")),
    tokensOut: readCount(dig(usage, "output_tokens")),
    billing: {
      serviceTier: billedServiceTier(dig(usage, "service_tier")),
      tokensCacheWrite1h: readCount(dig(usage, "cache_creation", "ephemeral_1h_input_tokens")),
      webSearchRequests: readCount(dig(usage, "server_tool_use", "web_search_requests")),
    },
  });
}

function readMessage(call: ProviderCall, message: unknown): void {
  call.report({ model: readString(dig(message, "model")) });
  readUsage(call, dig(message, "usage"));
}

const messageReader: ResponseReader = {
  response: readMessage,
  event(call, event) {
    switch (dig(event, "type")) {
      case "message_start": // the model and input counts, and an early output count
        readMessage(call, dig(event, "message"));
        break;
      case "content_block_delta": // text, thinking or tool input: output has begun
        call.firstToken();
        break;
      case "message_delta": // cumulative counts as generation goes on
        readUsage(call, dig(event, "usage"));
        break;
      case "error":
        call.reportFailure(readString(dig(event, "error", "message")) ?? "stream error");
        break;
    }
    return true;
  },
};
