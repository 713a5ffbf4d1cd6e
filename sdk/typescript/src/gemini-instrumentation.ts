import type { Instrumentation } from "./instrumentation.js";
import { groundingTally } from "./gemini-grounding.js";
import { billedServiceTier } from "./price-table.js";
import { patchMethod } from "./patch-method.js";
import { type ProviderCall, startCall } from "./provider-call.js";
import { dig, readCount, readString, sumCounts } from "./read-json.js";
import { tracedIterator } from "./traced-iterator.js";

/**
 * Traces `models.generateContent`, `models.generateContentStream` and
 * `models.embedContent` of `@google/genai`, and `chats` which use them. Those two are arrow functions
 * set on each instance, so the prototype methods they call for every HTTP
 * request are patched instead: `generateContentInternal` and
 * `generateContentStreamInternal`. One trace per request, so automatic
 * function calling and continuation (several requests per call) are traced
 * request by request, as they are billed.
 */
export const geminiInstrumentation: Instrumentation = {
  packageName: "@google/genai",
  patch(moduleExports, recorder) {
    const models = dig(moduleExports, "Models", "prototype");
    /** Patches one request method: a trace per call, `onResult` reading the result into it. */
    const traced = (method: string, onResult: (call: ProviderCall, result: unknown) => unknown) =>
      patchMethod(
        models,
        method,
        (generate) =>
          function (this: unknown, request: unknown, ...rest: unknown[]) {
            const { call, params, refused } = startCall(recorder, "gemini", request);
            if (refused) return refused;
            if (!call) return generate.call(this, params, ...rest);
            return settle(
              call,
              () => generate.call(this, params, ...rest),
              (result) => onResult(call, result),
            );
          },
      );
    const undo = [
      traced("generateContentInternal", (call, response) => {
        readResponse(call, response, groundingTally());
        call.succeed();
        return response;
      }),
      traced("generateContentStreamInternal", (call, chunks) => {
        const grounding = groundingTally();
        return tracedIterator(chunks as AsyncIterator<unknown>, call, (chunk) => {
          readResponse(call, chunk, grounding);
          if (hasOutput(chunk)) call.firstToken();
          return true;
        });
      }),
      traced("embedContentInternal", (call, response) => {
        readEmbedding(call, response);
        call.succeed();
        return response;
      }),
    ];
    return undo.filter((u) => u !== undefined);
  },
};

/** Runs `invoke`; a failure is traced and rethrown unchanged, a result goes through `onResult`. */
function settle(call: ProviderCall, invoke: () => unknown, onResult: (result: unknown) => unknown): Promise<unknown> {
  let pending: unknown;
  try {
    pending = invoke();
  } catch (error) {
    call.fail(error);
    throw error;
  }
  return Promise.resolve(pending).then(onResult, (error: unknown) => {
    call.fail(error);
    throw error;
  });
}

// Every streamed chunk carries usageMetadata with running totals.
// promptTokenCount includes the cached tokens (cachedContentTokenCount).
// Thinking tokens (thoughtsTokenCount) are billed as output but counted apart
// from candidatesTokenCount: tokens_out is their sum, and tokens_reasoning the
// thinking part. Tool-use prompt tokens are billed as input but counted apart
// from the prompt: tokens_in adds them. Grounding searches come from the
// candidates' groundingMetadata, counted by `grounding` over the call's responses.
function readResponse(
  call: ProviderCall,
  response: unknown,
  grounding: (model: string, response: unknown) => number | undefined,
): void {
  const usage = dig(response, "usageMetadata");
  const model = readString(dig(response, "modelVersion")) ?? call.model;
  call.report({
    model,
    tokensIn: sumCounts(dig(usage, "promptTokenCount"), dig(usage, "toolUsePromptTokenCount")),
    tokensOut: sumCounts(dig(usage, "candidatesTokenCount"), dig(usage, "thoughtsTokenCount")),
    tokensCachedIn: readCount(dig(usage, "cachedContentTokenCount")),
    tokensReasoning: readCount(dig(usage, "thoughtsTokenCount")),
    billing: {
      serviceTier: billedServiceTier(dig(usage, "trafficType")),
      // Audio among the uncached prompt: the prompt's audio less the cached audio.
      tokensAudioIn: modalityCount(dig(usage, "promptTokensDetails"), dig(usage, "cacheTokensDetails")),
      tokensAudioOut: modalityCount(dig(usage, "candidatesTokensDetails")),
      webSearchRequests: grounding(model, response),
    },
  });
}

/** AUDIO tokens of a ModalityTokenCount list, less those of `less`; undefined when it lists none. */
function modalityCount(details: unknown, less?: unknown): number | undefined {
  const audio = (list: unknown) =>
    Array.isArray(list)
      ? list.filter((d) => dig(d, "modality") === "AUDIO").map((d) => readCount(dig(d, "tokenCount")) ?? 0)
      : [];
  const counts = audio(details);
  if (counts.length === 0) return undefined;
  const total = counts.reduce((a, b) => a + b, 0) - audio(less).reduce((a, b) => a + b, 0);
  return Math.max(0, total);
}

// An embedding's input tokens: usageMetadata where the API reports it, else the sum of each
// embedding's statistics.tokenCount (Vertex AI); a response with neither has no usage.
function readEmbedding(call: ProviderCall, response: unknown): void {
  const embeddings = dig(response, "embeddings");
  const counts = Array.isArray(embeddings) ? embeddings.map((e) => readCount(dig(e, "statistics", "tokenCount"))) : [];
  const summed = counts.length > 0 && counts.every((c) => c !== undefined) ? sumCounts(...counts) : undefined;
  const tokensIn = readCount(dig(response, "usageMetadata", "promptTokenCount")) ?? summed;
  if (tokensIn !== undefined) call.report({ tokensIn, tokensOut: 0 });
}

function hasOutput(chunk: unknown): boolean {
  const candidates = dig(chunk, "candidates");
  if (!Array.isArray(candidates)) return false;
  return candidates.some((candidate) => {
    const parts = dig(candidate, "content", "parts");
    return Array.isArray(parts) && parts.length > 0;
  });
}
