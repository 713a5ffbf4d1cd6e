import type { Instrumentation } from "./instrumentation.js";
import { patchMethod } from "./patch-method.js";
import { ProviderCall } from "./provider-call.js";
import { readCount, sumCounts } from "./read-count.js";
import { traceStainlessCall, type ResponseReader } from "./trace-stainless-call.js";

/**
 * Traces `messages.create` and `beta.messages.create` of
 * `@anthropic-ai/sdk`; `messages.stream()` and `messages.parse()` go through
 * `create`.
 */
export const anthropicInstrumentation: Instrumentation = {
  packageName: "@anthropic-ai/sdk",
  patch(moduleExports, recorder) {
    const exports = moduleExports as { Anthropic?: any; default?: any } | undefined;
    const Anthropic = exports?.Anthropic ?? exports?.default;
    const targets = [Anthropic?.Messages?.prototype, Anthropic?.Beta?.Messages?.prototype];
    return targets
      .map((target) =>
        patchMethod(target ?? {}, "create", (create) =>
          function (this: unknown, params: Record<string, any> | undefined, ...rest: unknown[]) {
            const call = new ProviderCall(recorder, "anthropic", params?.model);
            return traceStainlessCall(call, params?.stream === true, messageReader, () =>
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
function readUsage(call: ProviderCall, usage: any): void {
  call.report({
    tokensIn: sumCounts(usage?.input_tokens, usage?.cache_creation_input_tokens, usage?.cache_read_input_tokens),
    tokensOut: readCount(usage?.output_tokens),
  });
}

const messageReader: ResponseReader = {
  response(call, message: any) {
    call.report({ model: message?.model });
    readUsage(call, message?.usage);
  },
  event(call, event: any) {
    switch (event?.type) {
      case "message_start": // the model and input counts, and an early output count
        this.response(call, event.message);
        break;
      case "message_delta": // cumulative counts as generation goes on
        readUsage(call, event.usage);
        break;
      case "error":
        call.reportFailure(event.error?.message ?? "stream error");
        break;
    }
    return true;
  },
};
