// Bodies in the shapes of the Gemini API reference
// (ai.google.dev/api/generate-content: GenerateContentResponse, streaming with
// alt=sse, error format).
import type { ProviderFixture } from "./fake-provider.js";

export const GEMINI_USAGE = { promptTokenCount: 8, candidatesTokenCount: 12, thoughtsTokenCount: 3 };

const MODEL_PATH = /^\/v1beta\/models\/([^:]+):(generateContent|streamGenerateContent)$/;

function chunk(model: string, text: string, usage: object, finishReason?: string) {
  return {
    candidates: [
      { content: { parts: [{ text }], role: "model" }, ...(finishReason ? { finishReason } : {}), index: 0 },
    ],
    usageMetadata: usage,
    modelVersion: model,
    responseId: "mS1YaJ3mNc6W1e8P0s2pqQ4",
  };
}

const full = {
  ...GEMINI_USAGE,
  totalTokenCount: 23,
  promptTokensDetails: [{ modality: "TEXT", tokenCount: 8 }],
};

const STATUS: Record<number, [string, string]> = {
  400: ["INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."],
  429: ["RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."],
  500: [
    "INTERNAL",
    "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
  ],
  503: ["UNAVAILABLE", "The model is overloaded. Please try again later."],
};

export const geminiFixture: ProviderFixture = {
  newline: "\r\n",
  matches: (path) => MODEL_PATH.test(path),
  isStream: (path) => path.endsWith(":streamGenerateContent"),
  response: (path) => {
    const model = MODEL_PATH.exec(path)![1]!;
    return chunk(model, "Hello there!", full, "STOP");
  },
  events(path) {
    const model = MODEL_PATH.exec(path)![1]!;
    return [
      { data: chunk(model, "Hello", { promptTokenCount: 8, totalTokenCount: 8 }) },
      { data: chunk(model, " there", { promptTokenCount: 8, candidatesTokenCount: 6, totalTokenCount: 14 }) },
      { data: chunk(model, "!", full, "STOP") },
    ];
  },
  midStreamError: {
    data: { error: { code: 503, message: "The model is overloaded. Please try again later.", status: "UNAVAILABLE" } },
  },
  errorBody(status) {
    const [code, message] = STATUS[status] ?? STATUS[500]!;
    return { error: { code: status, message, status: code } };
  },
};
