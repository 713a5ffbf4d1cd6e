// Bodies and events in the shapes of OpenAI's API reference
// (platform.openai.com/docs/api-reference: chat, chat streaming, responses,
// responses streaming, error codes).
import type { ProviderFixture } from "./fake-provider.js";
import type { SseEvent } from "./sse.js";

export const OPENAI_CHAT_USAGE = { prompt_tokens: 19, completion_tokens: 10 };
export const OPENAI_RESPONSES_USAGE = { input_tokens: 36, output_tokens: 87 };
/**
 * What a reasoning model (o-series, gpt-5) reports for a long prompt sent
 * again: most of it read from the prompt cache (in 128-token steps past the
 * first 1024), and most of the output spent reasoning. Counts include their parts.
 */
export const OPENAI_REASONING_USAGE = { input: 2_006, cached: 1_920, output: 420, reasoning: 256 };
const isReasoningModel = (model: string) => /^(o\d|gpt-5)/.test(model);
/** The snapshot name the fake reports for `gpt-4o` (OpenAI answers with the dated snapshot). */
export const snapshotOf = (model: string) => (model === "gpt-4o" ? "gpt-4o-2024-08-06" : model);

/** What an audio model (`gpt-4o-audio-preview`, asked for audio) reports: parts of its prompt and completion are audio. */
export const OPENAI_AUDIO_USAGE = { input: 120, audioIn: 100, output: 80, audioOut: 60 };

function chatUsage(model: string) {
  if (model.includes("audio")) {
    const { input, audioIn, output, audioOut } = OPENAI_AUDIO_USAGE;
    return {
      prompt_tokens: input,
      completion_tokens: output,
      total_tokens: input + output,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: audioIn },
      completion_tokens_details: {
        reasoning_tokens: 0,
        audio_tokens: audioOut,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    };
  }
  if (!isReasoningModel(model)) return usage;
  const { input, cached, output, reasoning } = OPENAI_REASONING_USAGE;
  return {
    prompt_tokens: input,
    completion_tokens: output,
    total_tokens: input + output,
    prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: reasoning,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

function responsesUsage(model: string) {
  if (!isReasoningModel(model)) {
    return {
      ...OPENAI_RESPONSES_USAGE,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 123,
    };
  }
  const { input, cached, output, reasoning } = OPENAI_REASONING_USAGE;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: cached },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: reasoning },
    total_tokens: input + output,
  };
}

const usage = {
  ...OPENAI_CHAT_USAGE,
  total_tokens: 29,
  prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
  completion_tokens_details: {
    reasoning_tokens: 0,
    audio_tokens: 0,
    accepted_prediction_tokens: 0,
    rejected_prediction_tokens: 0,
  },
};

/** The tier OpenAI reports having served a request at: the one asked for, if flex or priority. */
const servedTier = (body: any) =>
  body.service_tier === "flex" || body.service_tier === "priority" ? body.service_tier : "default";

export const OPENAI_EMBEDDING_TOKENS = 8;
const VECTOR = [0.0023064255, -0.009327292, 0.015797347];
// The openai package asks for base64 (little-endian float32) unless told otherwise.
const embedding = (format: unknown) =>
  format === "base64" ? Buffer.from(new Float32Array(VECTOR).buffer).toString("base64") : VECTOR;

/** `embeddings.create`: a float vector per input, and usage with prompt tokens only. */
export const openaiEmbeddingsFixture: ProviderFixture = {
  matches: (path) => path === "/v1/embeddings",
  isStream: () => false,
  response: (_path, body) => ({
    object: "list",
    data: [{ object: "embedding", index: 0, embedding: embedding(body.encoding_format) }],
    model: String(body.model),
    usage: { prompt_tokens: OPENAI_EMBEDDING_TOKENS, total_tokens: OPENAI_EMBEDDING_TOKENS },
  }),
  events: () => [],
  midStreamError: { data: {} },
  errorBody: (status) => ({ error: { message: `status ${status}`, type: "server_error", param: null, code: null } }),
};

function chunk(model: string, choices: unknown[], extra: object = {}) {
  return {
    id: "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
    object: "chat.completion.chunk",
    created: 1741569952,
    model: snapshotOf(model),
    service_tier: "default",
    system_fingerprint: "fp_eb9dce56a8",
    choices,
    ...extra,
  };
}

function response(model: string, status: "in_progress" | "completed") {
  const done = status === "completed";
  return {
    id: "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
    object: "response",
    created_at: 1741476542,
    status,
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    model: snapshotOf(model),
    output: done
      ? [
          {
            type: "message",
            id: "msg_67ccd2bf17f0819081ff3bb2cf6508e60bb6a6b452d3795b",
            status: "completed",
            role: "assistant",
            content: [{ type: "output_text", text: "Hello there!", annotations: [] }],
          },
        ]
      : [],
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: true,
    temperature: 1.0,
    text: { format: { type: "text" } },
    tool_choice: "auto",
    tools: [],
    top_p: 1.0,
    truncation: "disabled",
    usage: done ? responsesUsage(model) : null,
    user: null,
    metadata: {},
  };
}

const ERROR_TYPES: Record<number, [string, string | null, string]> = {
  400: [
    "invalid_request_error",
    "model_not_found",
    "The model `gpt-nope` does not exist or you do not have access to it.",
  ],
  401: [
    "invalid_request_error",
    "invalid_api_key",
    "Incorrect API key provided: sk-fake. You can find your API key at https://platform.openai.com/account/api-keys.",
  ],
  429: [
    "rate_limit_error",
    "rate_limit_exceeded",
    "Rate limit reached for gpt-4o in organization org-fake on requests per min (RPM): Limit 3, Used 3, Requested 1.",
  ],
  500: ["server_error", null, "The server had an error while processing your request. Sorry about that!"],
};

const serverError = {
  message: "The server had an error while processing your request. Sorry about that!",
  type: "server_error",
  param: null,
  code: null,
};

export const openaiChatFixture: ProviderFixture = {
  // OpenAI's path, and Azure OpenAI's deployment path.
  matches: (path) => path === "/v1/chat/completions" || /^\/openai\/deployments\/[^/]+\/chat\/completions$/.test(path),
  isStream: (_path, body) => body.stream === true,
  response: (_path, body) => ({
    id: "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
    object: "chat.completion",
    created: 1741570283,
    model: snapshotOf(String(body.model)),
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: "Hello there!", refusal: null, annotations: [] },
        logprobs: null,
        finish_reason: "stop",
      },
    ],
    usage: chatUsage(String(body.model)),
    service_tier: servedTier(body),
    system_fingerprint: "fp_fc9f1d7035",
  }),
  events(_path, body) {
    const model = String(body.model);
    const delta = (d: object, finish: string | null = null) => [
      { index: 0, delta: d, logprobs: null, finish_reason: finish },
    ];
    const events: SseEvent[] = [
      chunk(model, delta({ role: "assistant", content: "", refusal: null })),
      chunk(model, delta({ content: "Hello" })),
      chunk(model, delta({ content: " there!" })),
      chunk(model, delta({}, "stop")),
    ].map((data) => ({ data }));
    // Like OpenAI: the usage chunk only when asked for, after the last choice.
    if (body.stream_options?.include_usage) events.push({ data: chunk(model, [], { usage: chatUsage(model) }) });
    events.push({ data: "[DONE]" });
    return events;
  },
  midStreamError: { data: { error: serverError } },
  errorBody(status) {
    const [type, code, message] = ERROR_TYPES[status] ?? ERROR_TYPES[500]!;
    return { error: { message, type, param: null, code } };
  },
};

export const openaiResponsesFixture: ProviderFixture = {
  matches: (path) => path === "/v1/responses",
  isStream: (_path, body) => body.stream === true,
  response: (_path, body) => response(String(body.model), "completed"),
  events(_path, body) {
    const model = String(body.model);
    const item = { id: "msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654", type: "message", role: "assistant" };
    const events: Array<{ type: string } & Record<string, unknown>> = [
      { type: "response.created", response: response(model, "in_progress") },
      { type: "response.in_progress", response: response(model, "in_progress") },
      { type: "response.output_item.added", output_index: 0, item: { ...item, status: "in_progress", content: [] } },
      {
        type: "response.content_part.added",
        item_id: item.id,
        output_index: 0,
        content_index: 0,
        part: { type: "output_text", text: "", annotations: [] },
      },
      { type: "response.output_text.delta", item_id: item.id, output_index: 0, content_index: 0, delta: "Hello" },
      { type: "response.output_text.delta", item_id: item.id, output_index: 0, content_index: 0, delta: " there!" },
      { type: "response.output_text.done", item_id: item.id, output_index: 0, content_index: 0, text: "Hello there!" },
      { type: "response.completed", response: response(model, "completed") },
    ];
    return events.map((data, sequence_number) => ({ event: data.type, data: { ...data, sequence_number } }));
  },
  midStreamError: {
    event: "error",
    data: { type: "error", code: "server_error", message: serverError.message, param: null, sequence_number: 5 },
  },
  errorBody: openaiChatFixture.errorBody,
};
