import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { stats, unpatch } from "../src/index.js";
import { azureClientFor } from "./support/clients.js";
import { startHarness, TEST_KEY, type Harness } from "./support/harness.js";
import models from "../../pricing/models.json" with { type: "json" };
import {
  OPENAI_AUDIO_USAGE,
  OPENAI_CHAT_USAGE,
  OPENAI_EMBEDDING_TOKENS,
  OPENAI_REASONING_USAGE,
  OPENAI_RESPONSES_USAGE,
} from "./support/openai-fixtures.js";

// Created before init(): prototype patching must reach it too.
const early = new OpenAI({ apiKey: "sk-fake", baseURL: "http://127.0.0.1:1/v1" });

let h: Harness;
let client: OpenAI;
const messages = [{ role: "user" as const, content: "Say hello" }];

beforeAll(async () => {
  h = await startHarness();
  client = new OpenAI({ apiKey: "sk-fake", baseURL: `${h.provider.url}/v1`, maxRetries: 0 });
});
afterAll(() => h.close());
beforeEach(async () => {
  h.provider.scenario = { kind: "ok" };
  await h.traces();
});

// gpt-4o at 2.5 / 10 USD per million tokens.
const chatCost = (19 * 2.5 + 10 * 10) / 1e6;

describe("chat completions", () => {
  it("traces a completion with usage, latency and cost priced by its dated model name", async () => {
    const calledFrom = Date.now();
    const completion = await client.chat.completions.create({ model: "gpt-4o", messages });
    expect(completion.choices[0]?.message.content).toBe("Hello there!");
    const [trace, ...more] = await h.traces();
    expect(more).toEqual([]);
    expect(trace).toEqual({
      provider: "openai",
      model: "gpt-4o-2024-08-06",
      tokens_in: OPENAI_CHAT_USAGE.prompt_tokens,
      tokens_out: OPENAI_CHAT_USAGE.completion_tokens,
      tokens_cached_in: 0,
      tokens_reasoning: 0,
      latency_ms: expect.any(Number),
      cost_usd: chatCost,
      api_key: TEST_KEY,
      status: "success",
      called_at: expect.any(String),
    });
    expect(Number.isInteger(trace!.latency_ms)).toBe(true);
    // The call's start, on the wall clock (a millisecond either side: the clocks round apart).
    const calledAt = Date.parse(trace!.called_at!);
    expect(calledAt).toBeGreaterThanOrEqual(calledFrom - 1);
    expect(calledAt).toBeLessThanOrEqual(calledFrom + trace!.latency_ms + 50);
  });

  it("traces clients created before init()", async () => {
    const before = new OpenAI({ apiKey: "sk-fake", baseURL: `${h.provider.url}/v1`, maxRetries: 0 });
    expect(Object.getPrototypeOf(before.chat.completions)).toBe(Object.getPrototypeOf(early.chat.completions));
    await before.chat.completions.create({ model: "gpt-4o-mini", messages });
    expect(await h.traces()).toMatchObject([{ model: "gpt-4o-mini", tokens_in: 19 }]);
  });

  it("keeps withResponse() and asResponse() working", async () => {
    const { data, response } = await client.chat.completions.create({ model: "gpt-4o", messages }).withResponse();
    expect(data.usage?.prompt_tokens).toBe(19);
    expect(response.status).toBe(200);
    const raw = await client.chat.completions.create({ model: "gpt-4o", messages }).asResponse();
    expect((await raw.json()).object).toBe("chat.completion");
    // asResponse() leaves the body to the caller, so only the first call has usage to trace.
    expect(await h.traces()).toMatchObject([{ tokens_in: 19 }]);
  });

  it("traces parse()", async () => {
    const parsed = await client.chat.completions.parse({ model: "gpt-4o", messages });
    expect(parsed.choices[0]?.message.content).toBe("Hello there!");
    expect(await h.traces()).toMatchObject([{ tokens_out: 10, status: "success" }]);
  });

  it("traces a stream read to the end, with the usage the caller asked for", async () => {
    const stream = await client.chat.completions.create({
      model: "gpt-4o",
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.at(-1)?.usage?.completion_tokens).toBe(10); // the caller still sees its usage chunk
    expect(await h.traces()).toMatchObject([
      { model: "gpt-4o-2024-08-06", tokens_in: 19, tokens_out: 10, cost_usd: chatCost, status: "success" },
    ]);
  });

  it("does not add stream_options for servers other than OpenAI's own", async () => {
    const stream = await client.chat.completions.create({ model: "gpt-4o", messages, stream: true });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(text).toBe("Hello there!");
    expect(h.provider.requests.at(-1)?.body.stream_options).toBeUndefined();
    expect(await h.traces()).toMatchObject([{ tokens_in: 0, tokens_out: 0, status: "success" }]);
  });

  it("asks OpenAI itself for stream usage and hides the extra chunk from the caller", async () => {
    const viaOpenAI = new OpenAI({
      apiKey: "sk-fake",
      baseURL: "https://api.openai.com/v1",
      maxRetries: 0,
      fetch: (url, init) => fetch(String(url).replace("https://api.openai.com", h.provider.url), init),
    });
    const stream = await viaOpenAI.chat.completions.create({ model: "gpt-4o", messages, stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(h.provider.requests.at(-1)?.body.stream_options).toEqual({ include_usage: true });
    expect(chunks).toHaveLength(4);
    expect(chunks.every((c) => c.usage === undefined && c.choices.length === 1)).toBe(true);
    expect(await h.traces()).toMatchObject([{ tokens_in: 19, tokens_out: 10, cost_usd: chatCost }]);
  });

  it("leaves an explicit include_usage: false alone", async () => {
    const viaOpenAI = new OpenAI({
      apiKey: "sk-fake",
      baseURL: "https://api.openai.com/v1",
      fetch: (url, init) => fetch(String(url).replace("https://api.openai.com", h.provider.url), init),
    });
    const body = { model: "gpt-4o", messages, stream: true as const, stream_options: { include_usage: false } };
    for await (const _ of await viaOpenAI.chat.completions.create(body));
    expect(h.provider.requests.at(-1)?.body.stream_options).toEqual({ include_usage: false });
    expect(body.stream_options).toEqual({ include_usage: false }); // the caller's object is never changed
    await h.traces();
  });

  it("traces a stream the caller breaks out of, with what was seen", async () => {
    const stream = await client.chat.completions.create({ model: "gpt-4o", messages, stream: true });
    for await (const _ of stream) break;
    expect(await h.traces()).toMatchObject([{ model: "gpt-4o-2024-08-06", tokens_out: 0, status: "success" }]);
  });

  it("traces a stream that fails mid-way as an error and rethrows the library's error", async () => {
    h.provider.scenario = { kind: "stream-error", after: 2 };
    const stream = await client.chat.completions.create({ model: "gpt-4o", messages, stream: true });
    const error = await (async () => {
      for await (const _ of stream);
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((await h.traces())[0]).toMatchObject({
      status: "error",
      error: expect.stringContaining("The server had an error"),
    });
  });

  it("traces a stream whose connection drops", async () => {
    h.provider.scenario = { kind: "stream-cut", after: 2 };
    const stream = await client.chat.completions.create({ model: "gpt-4o", messages, stream: true });
    await expect(
      (async () => {
        for await (const _ of stream);
      })(),
    ).rejects.toThrow();
    expect(await h.traces()).toMatchObject([{ status: "error" }]);
  });

  it("traces runTools(), one trace per request it makes", async () => {
    const tool = {
      type: "function" as const,
      function: {
        name: "noop",
        description: "does nothing",
        parameters: { type: "object" as const, properties: {} },
        function: (_args: string) => "ok",
      },
    };
    const runner = client.chat.completions.runTools({ model: "gpt-4o", messages, tools: [tool] });
    expect((await runner.finalChatCompletion()).choices[0]?.message.content).toBe("Hello there!");
    expect(await h.traces()).toMatchObject([{ provider: "openai", tokens_in: 19, tokens_out: 10 }]);
  });

  it("traces AzureOpenAI, which shares OpenAI's resource classes", async () => {
    const azure = azureClientFor(h.provider.url);
    await azure.chat.completions.create({ model: "gpt-4o", messages });
    expect(h.provider.requests.at(-1)?.path).toBe("/openai/deployments/my-gpt-4o/chat/completions");
    expect(await h.traces()).toMatchObject([{ provider: "openai", model: "gpt-4o-2024-08-06", tokens_in: 19 }]);
  });

  it("traces the stream() helper once", async () => {
    const runner = client.chat.completions.stream({
      model: "gpt-4o",
      messages,
      stream_options: { include_usage: true },
    });
    const final = await runner.finalChatCompletion();
    expect(final.choices[0]?.message.content).toBe("Hello there!");
    expect(await h.traces()).toMatchObject([{ tokens_in: 19, tokens_out: 10 }]);
  });

  it.each([400, 401, 429, 500])(
    "traces a %i as an error and rethrows the library's error unchanged",
    async (status) => {
      h.provider.scenario = { kind: "status", status };
      const error = await client.chat.completions.create({ model: "gpt-4o", messages }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(status);
      const [trace] = await h.traces();
      expect(trace).toMatchObject({
        provider: "openai",
        model: "gpt-4o",
        tokens_in: 0,
        tokens_out: 0,
        cost_usd: 0,
        status: "error",
      });
      expect(trace!.error).toContain((error as Error).message);
    },
  );
});

describe("responses", () => {
  const responsesCost = (36 * 2.5 + 87 * 10) / 1e6;

  it("traces responses.create", async () => {
    const response = await client.responses.create({ model: "gpt-4o", input: "Say hello" });
    expect(response.output_text).toBe("Hello there!");
    expect(await h.traces()).toMatchObject([
      {
        model: "gpt-4o-2024-08-06",
        tokens_in: OPENAI_RESPONSES_USAGE.input_tokens,
        tokens_out: 87,
        cost_usd: responsesCost,
      },
    ]);
  });

  it("traces a responses stream from its completed event", async () => {
    const stream = await client.responses.create({ model: "gpt-4o", input: "Say hello", stream: true });
    const types = [];
    for await (const event of stream) types.push(event.type);
    expect(types.at(-1)).toBe("response.completed");
    expect(await h.traces()).toMatchObject([{ tokens_in: 36, tokens_out: 87, status: "success" }]);
  });

  it("traces the responses.stream() helper", async () => {
    const final = await client.responses.stream({ model: "gpt-4o", input: "Say hello" }).finalResponse();
    expect(final.output_text).toBe("Hello there!");
    expect(await h.traces()).toMatchObject([{ tokens_in: 36, tokens_out: 87 }]);
  });

  it("traces an error event in a responses stream as an error", async () => {
    h.provider.scenario = { kind: "stream-error", after: 3 };
    const stream = await client.responses.create({ model: "gpt-4o", input: "Say hello", stream: true });
    for await (const _ of stream);
    expect(await h.traces()).toMatchObject([
      { status: "error", error: expect.stringContaining("The server had an error") },
    ]);
  });

  it("traces a responses stream the caller breaks out of", async () => {
    const stream = await client.responses.create({ model: "gpt-4o", input: "Say hello", stream: true });
    for await (const _ of stream) break;
    expect(await h.traces()).toMatchObject([{ model: "gpt-4o-2024-08-06", status: "success", tokens_in: 0 }]);
  });

  it("traces HTTP errors", async () => {
    h.provider.scenario = { kind: "status", status: 400 };
    await expect(client.responses.create({ model: "gpt-4o", input: "x" })).rejects.toBeInstanceOf(
      OpenAI.BadRequestError,
    );
    expect(await h.traces()).toMatchObject([{ status: "error" }]);
  });
});

describe("billing modes and embeddings", () => {
  const table = (models as { models: { openai: Record<string, any> } }).models.openai;

  it("traces the service tier OpenAI reports and prices the call at that tier's rates", async () => {
    await client.chat.completions.create({ model: "gpt-5.4", messages, service_tier: "flex" });
    const { input, cached, output } = OPENAI_REASONING_USAGE;
    const flex = table["gpt-5.4"].service_tiers.flex;
    const [trace] = await h.traces();
    expect(trace).toMatchObject({ service_tier: "flex", tokens_in: input, tokens_cached_in: cached });
    expect(trace?.cost_usd).toBe(
      ((input - cached) * flex.input + cached * flex.cached_input + output * flex.output) / 1e6,
    );
    // "default" is the standard tier: not sent, standard rates.
    await client.chat.completions.create({ model: "gpt-4o", messages });
    const [standard] = await h.traces();
    expect(standard).not.toHaveProperty("service_tier");
    expect(standard?.cost_usd).toBe(chatCost);
  });

  it("traces audio input and output tokens and prices them at the audio rates", async () => {
    await client.chat.completions.create({
      model: "gpt-audio",
      messages,
      modalities: ["text", "audio"],
      audio: { voice: "alloy", format: "wav" },
    });
    const { input, audioIn, output, audioOut } = OPENAI_AUDIO_USAGE;
    const p = table["gpt-audio"];
    const [trace] = await h.traces();
    expect(trace).toMatchObject({
      tokens_in: input,
      tokens_audio_in: audioIn,
      tokens_out: output,
      tokens_audio_out: audioOut,
    });
    expect(trace?.cost_usd).toBe(
      ((input - audioIn) * p.input +
        audioIn * p.input_audio +
        (output - audioOut) * p.output +
        audioOut * p.output_audio) /
        1e6,
    );
  });

  it("traces embeddings.create with its input tokens and prices it", async () => {
    const result = await client.embeddings.create({ model: "text-embedding-3-small", input: "The food was delicious" });
    expect(result.data[0]?.embedding.length).toBeGreaterThan(0);
    const [trace, ...more] = await h.traces();
    expect(more).toEqual([]);
    expect(trace).toMatchObject({
      provider: "openai",
      model: "text-embedding-3-small",
      tokens_in: OPENAI_EMBEDDING_TOKENS,
      tokens_out: 0,
      cost_usd: (OPENAI_EMBEDDING_TOKENS * table["text-embedding-3-small"].input) / 1e6,
      status: "success",
    });
  });

  it("traces a failed embeddings call at cost 0", async () => {
    h.provider.scenario = { kind: "status", status: 429 };
    await expect(client.embeddings.create({ model: "text-embedding-3-small", input: "x" })).rejects.toThrow();
    expect(await h.traces()).toMatchObject([
      { model: "text-embedding-3-small", status: "error", tokens_in: 0, cost_usd: 0 },
    ]);
  });
});

describe("unpatch", () => {
  it("restores the original methods", async () => {
    expect(stats().instrumented).toEqual(expect.arrayContaining(["openai (cjs)", "openai (esm)"]));
    unpatch();
    await client.chat.completions.create({ model: "gpt-4o", messages });
    expect(await h.traces()).toEqual([]);
    expect(stats().instrumented).toEqual([]);
  });
});
