// Bodies and events in the shapes of Anthropic's Messages API reference
// (docs.anthropic.com: messages, streaming messages, errors).
import type { ProviderFixture } from "./fake-provider.js";

export const ANTHROPIC_USAGE = {
  input_tokens: 25,
  cache_creation_input_tokens: 5,
  cache_read_input_tokens: 10,
  output_tokens: 15,
};

function message(model: string, usage: object, content: unknown[], stopReason: string | null) {
  return {
    id: "msg_013Zva2CMHLNnXjNJJKqJ2EF",
    type: "message",
    role: "assistant",
    model,
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage,
  };
}

const ERROR_TYPES: Record<number, [string, string]> = {
  400: ["invalid_request_error", "messages: at least one message is required"],
  401: ["authentication_error", "invalid x-api-key"],
  429: ["rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"],
  500: ["api_error", "Internal server error"],
  529: ["overloaded_error", "Overloaded"],
};

/** Of ANTHROPIC_USAGE's 5 cache writes, those to a 1-hour cache when the request asks for one; searches when it offers web search. */
export const ANTHROPIC_1H_WRITES = 3;
export const ANTHROPIC_WEB_SEARCHES = 2;
function billedExtras(body: any) {
  const text = JSON.stringify(body);
  const oneHour = text.includes('"ttl":"1h"') ? ANTHROPIC_1H_WRITES : 0;
  const searches = Array.isArray(body.tools) && body.tools.some((t: any) => String(t.type).startsWith("web_search"));
  return {
    cache_creation: {
      ephemeral_5m_input_tokens: ANTHROPIC_USAGE.cache_creation_input_tokens - oneHour,
      ephemeral_1h_input_tokens: oneHour,
    },
    ...(searches ? { server_tool_use: { web_search_requests: ANTHROPIC_WEB_SEARCHES, web_fetch_requests: 0 } } : {}),
  };
}

export const anthropicMessagesFixture: ProviderFixture = {
  matches: (path) => path === "/v1/messages",
  isStream: (_path, body) => body.stream === true,
  response: (_path, body) =>
    message(
      String(body.model),
      { ...ANTHROPIC_USAGE, ...billedExtras(body), service_tier: "standard" },
      [{ type: "text", text: "Hello there!" }],
      "end_turn",
    ),
  events(_path, body) {
    const { output_tokens: _, ...inputUsage } = ANTHROPIC_USAGE;
    return [
      {
        event: "message_start",
        data: {
          type: "message_start",
          message: message(String(body.model), { ...inputUsage, output_tokens: 1 }, [], null),
        },
      },
      {
        event: "content_block_start",
        data: { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      },
      { event: "ping", data: { type: "ping" } },
      {
        event: "content_block_delta",
        data: { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hello" } },
      },
      {
        event: "content_block_delta",
        data: { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: " there!" } },
      },
      { event: "content_block_stop", data: { type: "content_block_stop", index: 0 } },
      {
        event: "message_delta",
        data: {
          type: "message_delta",
          delta: { stop_reason: "end_turn", stop_sequence: null },
          // Cumulative, input counts included, as the API sends them since mid-2025.
          usage: { ...ANTHROPIC_USAGE, ...billedExtras(body) },
        },
      },
      { event: "message_stop", data: { type: "message_stop" } },
    ];
  },
  midStreamError: {
    event: "error",
    data: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
  },
  errorBody(status) {
    const [type, message] = ERROR_TYPES[status] ?? ERROR_TYPES[500]!;
    return { type: "error", error: { type, message }, request_id: "req_011CSHoEeqs5C35K2UUqR7Fy" };
  },
};
