import type Anthropic from "@anthropic-ai/sdk";
import type { GoogleGenAI } from "@google/genai";
import type OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ANTHROPIC_USAGE } from "./support/anthropic-fixtures.js";
import { GEMINI_CACHED_USAGE } from "./support/gemini-fixtures.js";
import { clientsFor } from "./support/clients.js";
import { startHarness, type Harness } from "./support/harness.js";
import { OPENAI_REASONING_USAGE } from "./support/openai-fixtures.js";

// Cached, cache-write and reasoning tokens, read from each provider's usage
// as its real client library hands it over, streamed or not.
let h: Harness;
let openai: OpenAI;
let anthropic: Anthropic;
let gemini: GoogleGenAI;
const messages = [{ role: "user" as const, content: "Summarise the attached contract" }];

beforeAll(async () => {
  h = await startHarness();
  ({ openai, anthropic, gemini } = clientsFor(h.provider.url));
});
afterAll(() => h.close());
beforeEach(async () => {
  h.provider.scenario = { kind: "ok" };
  await h.traces();
});

/** The shared rule (sdk/pricing/README.md), in its order: uncached, cache reads, cache writes, output. */
const priced = (rates: number[], uncached: number, cached: number, written: number, out: number) =>
  (uncached * rates[0]! + cached * rates[1]! + written * rates[2]! + out * rates[3]!) / 1e6;
const { input, cached, output } = OPENAI_REASONING_USAGE;

const openaiTokens = {
  tokens_in: OPENAI_REASONING_USAGE.input,
  tokens_cached_in: OPENAI_REASONING_USAGE.cached,
  tokens_out: OPENAI_REASONING_USAGE.output,
  tokens_reasoning: OPENAI_REASONING_USAGE.reasoning,
};

describe("OpenAI: cached input and reasoning output are parts of prompt and completion tokens, cached input at its rate", () => {
  it("chat completion", async () => {
    await openai.chat.completions.create({ model: "o4-mini", messages });
    const [trace] = await h.traces();
    // o4-mini: 1.1 in, 0.275 cached in, 4.4 out per million.
    const cost = priced([1.1, 0.275, 1.1, 4.4], input - cached, cached, 0, output);
    expect(trace).toMatchObject({ model: "o4-mini", ...openaiTokens, cost_usd: cost });
    expect(trace).not.toHaveProperty("tokens_cache_write");
  });

  it("streamed chat completion", async () => {
    const stream = await openai.chat.completions.create({
      model: "gpt-5",
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const _ of stream);
    const cost = priced([1.25, 0.125, 1.25, 10], input - cached, cached, 0, output);
    expect(await h.traces()).toMatchObject([{ model: "gpt-5", ...openaiTokens, cost_usd: cost }]);
  });

  it("response, and streamed response", async () => {
    await openai.responses.create({ model: "o3", input: "Summarise" });
    for await (const _ of await openai.responses.create({ model: "o3", input: "Summarise", stream: true }));
    const priced_ = { ...openaiTokens, cost_usd: priced([2, 0.5, 2, 8], input - cached, cached, 0, output) };
    expect(await h.traces()).toMatchObject([priced_, priced_]);
  });
});

describe("Anthropic: input_tokens leaves out cache reads and writes, so tokens_in adds them", () => {
  const tokens = {
    tokens_in:
      ANTHROPIC_USAGE.input_tokens +
      ANTHROPIC_USAGE.cache_read_input_tokens +
      ANTHROPIC_USAGE.cache_creation_input_tokens,
    tokens_cached_in: ANTHROPIC_USAGE.cache_read_input_tokens,
    tokens_cache_write: ANTHROPIC_USAGE.cache_creation_input_tokens,
    tokens_out: ANTHROPIC_USAGE.output_tokens,
    // claude-sonnet-4-5: 3 in, 0.3 cache reads, 3.75 cache writes, 15 out per million.
    cost_usd: priced(
      [3, 0.3, 3.75, 15],
      ANTHROPIC_USAGE.input_tokens,
      ANTHROPIC_USAGE.cache_read_input_tokens,
      ANTHROPIC_USAGE.cache_creation_input_tokens,
      ANTHROPIC_USAGE.output_tokens,
    ),
  };
  const request = { model: "claude-sonnet-4-5", max_tokens: 512, messages };

  it("message", async () => {
    await anthropic.messages.create(request);
    const [trace] = await h.traces();
    expect(trace).toMatchObject(tokens);
    expect(trace).not.toHaveProperty("tokens_reasoning"); // thinking is inside output_tokens, not counted apart
  });

  it("streamed message, whose message_delta repeats the input counts", async () => {
    for await (const _ of await anthropic.messages.create({ ...request, stream: true }));
    expect(await h.traces()).toMatchObject([tokens]);
  });
});

describe("Gemini: thinking is billed as output but counted apart from candidates", () => {
  const { promptTokenCount, cachedContentTokenCount, candidatesTokenCount, thoughtsTokenCount } = GEMINI_CACHED_USAGE;
  const tokens = {
    tokens_in: promptTokenCount,
    tokens_cached_in: cachedContentTokenCount,
    tokens_out: candidatesTokenCount + thoughtsTokenCount,
    tokens_reasoning: thoughtsTokenCount,
    // gemini-2.5-pro under 200k input: 1.25 in, 0.125 cached, 10 out per million (thinking at the output rate).
    cost_usd: priced(
      [1.25, 0.125, 1.25, 10],
      promptTokenCount - cachedContentTokenCount,
      cachedContentTokenCount,
      0,
      candidatesTokenCount + thoughtsTokenCount,
    ),
  };
  const request = { model: "gemini-2.5-pro", contents: "Summarise" };

  it("generateContent", async () => {
    await gemini.models.generateContent(request);
    expect(await h.traces()).toMatchObject([tokens]);
  });

  it("generateContentStream", async () => {
    for await (const _ of await gemini.models.generateContentStream(request));
    expect(await h.traces()).toMatchObject([tokens]);
  });
});
