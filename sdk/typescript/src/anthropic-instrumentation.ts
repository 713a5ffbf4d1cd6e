import type { Instrumentation } from "./instrumentation.js";
import { patchMethod } from "./patch-method.js";
import { ProviderCall } from "./provider-call.js";
import { dig, readCount, readString, sumCounts } from "./read-json.js";
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
            function (this: unknown, params: unknown, ...rest: unknown[]) {
              const call = new ProviderCall(recorder, "anthropic", dig(params, "model"));
              return traceStainlessCall(call, dig(params, "stream") === true, messageReader, () =>
                create.call(this, params, ...rest),
              );
            },
        ),
      )
      .filter((undo) => undo !== undefined);
  },
};

// Input is billed in three parts: uncached, written to cache, read from cache.
// tokens_in is their sum (the wire format has no separate cache counts).
function readUsage(call: ProviderCall, usage: unknown): void {
  call.report({
    tokensIn: sumCounts(
      dig(usage, "input_tokens"),
      dig(usage, "cache_creation_input_tokens"),
      dig(usage, "cache_read_input_tokens"),
    ),
    tokensOut: readCount(dig(usage, "output_tokens")),
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
