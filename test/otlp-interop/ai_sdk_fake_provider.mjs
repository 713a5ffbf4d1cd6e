// A local stand-in for OpenAI (chat completions and responses), Anthropic (messages) and Gemini
// (generateContent), answering in the bodies and server-sent events of their API references, with
// the usage each request asks for. A request's model names what to answer: `<model>` succeeds, and
// the prompt text (the last user message) may carry a JSON plan `{"usage": {...}, "fail": status}`.
import { createServer } from "node:http";

const sse = (res, events) => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  // The first chunk goes out at once, the rest a little later: the client measures a real time to first chunk.
  const [first, ...rest] = events;
  res.write(first);
  setTimeout(() => res.end(rest.join("")), 40);
};
const data = (event) => `data: ${JSON.stringify(event)}\n\n`;
const named = (event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;

function openaiChat(body, plan, res) {
  const u = plan.usage;
  const usage = {
    prompt_tokens: u.input,
    completion_tokens: u.output,
    total_tokens: u.input + u.output,
    prompt_tokens_details: { cached_tokens: u.cached ?? 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: u.reasoning ?? 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
  const base = {
    id: `chatcmpl-${plan.id}`,
    created: 1741569952,
    model: plan.model,
    system_fingerprint: "fp_eb9dce56a8",
    service_tier: "default",
  };
  if (!body.stream) {
    return json(res, 200, {
      ...base,
      object: "chat.completion",
      choices: [{ index: 0, message: { role: "assistant", content: "Hello.", refusal: null }, logprobs: null, finish_reason: "stop" }],
      usage,
    });
  }
  const chunk = (choices, extra = {}) => data({ ...base, object: "chat.completion.chunk", choices, ...extra });
  sse(res, [
    chunk([{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }]),
    chunk([{ index: 0, delta: { content: "Hello." }, logprobs: null, finish_reason: null }]),
    chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: "stop" }]),
    chunk([], { usage }),
    "data: [DONE]\n\n",
  ]);
}

function openaiResponses(body, plan, res) {
  const u = plan.usage;
  const usage = {
    input_tokens: u.input,
    input_tokens_details: { cached_tokens: u.cached ?? 0 },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: u.reasoning ?? 0 },
    total_tokens: u.input + u.output,
  };
  const message = {
    id: `msg_${plan.id}`,
    type: "message",
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text: "Hello.", annotations: [] }],
  };
  const response = (status, extra) => ({
    id: `resp_${plan.id}`,
    object: "response",
    created_at: 1741569952,
    status,
    model: plan.model,
    output: status === "completed" ? [message] : [],
    incomplete_details: null,
    ...extra,
  });
  if (!body.stream) return json(res, 200, response("completed", { usage }));
  sse(res, [
    named({ type: "response.created", sequence_number: 0, response: response("in_progress", { usage: null }) }),
    named({
      type: "response.output_item.added",
      sequence_number: 1,
      output_index: 0,
      item: { ...message, status: "in_progress", content: [] },
    }),
    named({
      type: "response.output_text.delta",
      sequence_number: 2,
      item_id: message.id,
      output_index: 0,
      content_index: 0,
      delta: "Hello.",
      logprobs: [],
    }),
    named({ type: "response.output_item.done", sequence_number: 3, output_index: 0, item: message }),
    named({ type: "response.completed", sequence_number: 4, response: response("completed", { usage }) }),
  ]);
}

function anthropicMessages(body, plan, res) {
  const u = plan.usage;
  // Anthropic's input_tokens leaves cache reads and writes out.
  const usage = {
    input_tokens: u.input - (u.cached ?? 0) - (u.cacheWrite ?? 0),
    cache_creation_input_tokens: u.cacheWrite ?? 0,
    cache_read_input_tokens: u.cached ?? 0,
    output_tokens: u.output,
    service_tier: "standard",
  };
  const message = { id: `msg_${plan.id}`, type: "message", role: "assistant", model: plan.model, stop_sequence: null };
  if (!body.stream) {
    return json(res, 200, { ...message, content: [{ type: "text", text: "Hello." }], stop_reason: "end_turn", usage });
  }
  sse(res, [
    named({ type: "message_start", message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } }),
    named({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
    named({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hello." } }),
    named({ type: "content_block_stop", index: 0 }),
    named({ type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: u.output } }),
    named({ type: "message_stop" }),
  ]);
}

function geminiGenerate(stream, plan, res) {
  const u = plan.usage;
  // Gemini counts thoughts apart from the candidates.
  const usageMetadata = {
    promptTokenCount: u.input,
    candidatesTokenCount: u.output - (u.reasoning ?? 0),
    ...(u.cached ? { cachedContentTokenCount: u.cached } : {}),
    ...(u.reasoning ? { thoughtsTokenCount: u.reasoning } : {}),
    totalTokenCount: u.input + u.output,
  };
  const candidate = (text, finishReason) => ({
    content: { role: "model", parts: [{ text }] },
    index: 0,
    ...(finishReason ? { finishReason } : {}),
  });
  const base = { modelVersion: plan.model, responseId: `resp-${plan.id}` };
  if (!stream) return json(res, 200, { candidates: [candidate("Hello.", "STOP")], usageMetadata, ...base });
  sse(res, [
    data({ candidates: [candidate("Hel")], usageMetadata: { promptTokenCount: u.input, totalTokenCount: u.input }, ...base }),
    data({ candidates: [candidate("lo.", "STOP")], usageMetadata, ...base }),
  ]);
}

function json(res, status, body) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

/** The error bodies each provider sends for `status`. */
function fail(api, status, res) {
  if (api === "anthropic") {
    const type = status === 529 ? "overloaded_error" : status === 429 ? "rate_limit_error" : "api_error";
    return json(res, status, { type: "error", error: { type, message: status === 529 ? "Overloaded" : "Internal server error" } });
  }
  if (api === "gemini") {
    return json(res, status, {
      error: { code: status, message: "Resource has been exhausted (e.g. check quota).", status: "RESOURCE_EXHAUSTED" },
    });
  }
  return json(res, status, {
    error: {
      message: "Rate limit reached for gpt-4o in organization org-x on tokens per min.",
      type: "tokens",
      param: null,
      code: "rate_limit_exceeded",
    },
  });
}

/** The plan a request carries in its last user message. */
function planOf(api, body) {
  const text = JSON.stringify(api === "gemini" ? body.contents : (body.messages ?? body.input));
  const match = /@@(\{.*?\})@@/.exec(text.replaceAll('\\"', '"'));
  if (!match) throw new Error(`no plan in ${text}`);
  return JSON.parse(match[1]);
}

export function startFakeProvider() {
  const server = createServer((req, res) => {
    let raw = "";
    req.on("data", (chunk) => (raw += chunk));
    req.on("end", () => {
      const url = req.url ?? "";
      const api = url.endsWith("/chat/completions")
        ? "chat"
        : url.endsWith("/responses")
          ? "responses"
          : url.endsWith("/messages")
            ? "anthropic"
            : /:(stream)?generateContent/i.test(url)
              ? "gemini"
              : undefined;
      if (!api) return json(res, 404, { error: { message: `no route ${url}` } });
      const body = JSON.parse(raw);
      const plan = planOf(api, body);
      if (plan.fail) return fail(api, plan.fail, res);
      if (api === "chat") return openaiChat(body, plan, res);
      if (api === "responses") return openaiResponses(body, plan, res);
      if (api === "anthropic") return anthropicMessages(body, plan, res);
      return geminiGenerate(url.includes(":streamGenerateContent"), plan, res);
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve({ server, url: `http://127.0.0.1:${server.address().port}` })),
  );
}
