// Bodies in the shapes of the Gemini API reference
// (ai.google.dev/api/generate-content: GenerateContentResponse, streaming with
// alt=sse, error format).
import type { ProviderFixture } from "./fake-provider.js";

export const GEMINI_USAGE = { promptTokenCount: 8, candidatesTokenCount: 12, thoughtsTokenCount: 3 };
/**
 * What gemini-2.5-pro reports for a prompt mostly served from its context
 * cache: promptTokenCount includes cachedContentTokenCount, while
 * thoughtsTokenCount (billed as output) is counted apart from candidatesTokenCount.
 */
export const GEMINI_CACHED_USAGE = {
  promptTokenCount: 4_120,
  cachedContentTokenCount: 4_096,
  candidatesTokenCount: 180,
  thoughtsTokenCount: 612,
};
const hasCachedUsage = (model: string) => model.startsWith("gemini-2.5-pro");

// @google/genai 2.x calls the v1beta API, 3.x the v1 API.
const MODEL_PATH = /^\/v1(?:beta)?\/models\/([^:]+):(generateContent|streamGenerateContent)$/;
const EMBED_PATH = /^\/v1(?:beta)?\/models\/([^:]+):batchEmbedContents$/;

/** A prompt with audio: 2 text tokens and 96 audio tokens; the answer is text. */
export const GEMINI_AUDIO_USAGE = { text: 2, audio: 96 };
const hasAudio = (body: any) => JSON.stringify(body?.contents ?? []).includes('"mimeType":"audio/');
/** usageMetadata.trafficType: priority when the request's labels ask for it (the fake's stand-in for a priority project). */
const trafficType = (body: any) => (body?.labels?.traffic === "priority" ? "ON_DEMAND_PRIORITY" : "ON_DEMAND");
function billed(usage: object, body: any): object {
  if (!hasAudio(body)) return { ...usage, trafficType: trafficType(body) };
  const { text, audio } = GEMINI_AUDIO_USAGE;
  return {
    ...usage,
    promptTokenCount: text + audio,
    promptTokensDetails: [
      { modality: "TEXT", tokenCount: text },
      { modality: "AUDIO", tokenCount: audio },
    ],
    trafficType: trafficType(body),
  };
}

/** The searches a grounded answer ran (groundingMetadata.webSearchQueries). */
export const GEMINI_SEARCH_QUERIES = ["who won euro 2024", "euro 2024 final score"];
const grounded = (body: any) =>
  Array.isArray(body?.tools) && body.tools.some((tool: any) => tool?.googleSearch !== undefined);
const groundingChunks = [
  { web: { uri: "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AUZIYQE1", title: "uefa.com" } },
  { web: { uri: "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AUZIYQH7", title: "aljazeera.com" } },
];
const groundingSupports = [
  {
    segment: { startIndex: 0, endIndex: 12, text: "Hello there!" },
    groundingChunkIndices: [0, 1],
    confidenceScores: [0.97, 0.91],
  },
];
/**
 * Grounding with Google Search as the API sends it: a whole response carries it all; a stream
 * sends the sources with the text that cites them, then everything again on the last chunk.
 */
const GROUNDING = {
  whole: {
    webSearchQueries: GEMINI_SEARCH_QUERIES,
    searchEntryPoint: {
      renderedContent:
        '<style>.container{display:flex}</style><div class="container"><a class="chip" href="https://www.google.com/search?q=who+won+euro+2024">who won euro 2024</a></div>',
    },
    groundingChunks,
    groundingSupports,
  },
  sources: { groundingChunks, groundingSupports },
};

function chunk(model: string, text: string, usage: object, finishReason?: string, groundingMetadata?: object) {
  return {
    candidates: [
      {
        content: { parts: [{ text }], role: "model" },
        ...(finishReason ? { finishReason } : {}),
        ...(groundingMetadata ? { groundingMetadata } : {}),
        index: 0,
      },
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

const cached = {
  ...GEMINI_CACHED_USAGE,
  totalTokenCount: 4_912,
  promptTokensDetails: [{ modality: "TEXT", tokenCount: 4_120 }],
  cacheTokensDetails: [{ modality: "TEXT", tokenCount: 4_096 }],
};
const finalUsage = (model: string) => (hasCachedUsage(model) ? cached : full);

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
  response: (path, body) => {
    const model = MODEL_PATH.exec(path)![1]!;
    return chunk(
      model,
      "Hello there!",
      billed(finalUsage(model), body),
      "STOP",
      grounded(body) ? GROUNDING.whole : undefined,
    );
  },
  events(path, body) {
    const model = MODEL_PATH.exec(path)![1]!;
    const prompt = finalUsage(model).promptTokenCount;
    const grounding = grounded(body) ? GROUNDING : { whole: undefined, sources: undefined };
    return [
      { data: chunk(model, "Hello", { promptTokenCount: prompt, totalTokenCount: prompt }) },
      {
        data: chunk(
          model,
          " there",
          {
            promptTokenCount: prompt,
            candidatesTokenCount: 6,
            totalTokenCount: prompt + 6,
          },
          undefined,
          grounding.sources,
        ),
      },
      { data: chunk(model, "!", billed(finalUsage(model), body), "STOP", grounding.whole) },
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

/** The Gemini API's batchEmbedContents (what `models.embedContent` calls): vectors, and no usage. */
export const geminiEmbedFixture: ProviderFixture = {
  matches: (path) => EMBED_PATH.test(path),
  isStream: () => false,
  response: (_path, body) => ({
    embeddings: (body.requests ?? []).map(() => ({ values: [0.013168523, -0.008711934, -0.046782676] })),
  }),
  events: () => [],
  midStreamError: { data: {} },
  errorBody(status) {
    const [code, message] = STATUS[status] ?? STATUS[500]!;
    return { error: { code: status, message, status: code } };
  },
};
