import { ApiError, GoogleGenAI } from "@google/genai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { stats } from "../src/index.js";
import models from "../../pricing/models.json" with { type: "json" };
import { GEMINI_AUDIO_USAGE, GEMINI_SEARCH_QUERIES, GEMINI_USAGE } from "./support/gemini-fixtures.js";
import { startHarness, type Harness } from "./support/harness.js";

let h: Harness;
let ai: GoogleGenAI;
const request = { model: "gemini-2.5-flash", contents: "Say hello" };
// Thinking tokens are billed as output; gemini-2.5-flash costs 0.3 / 2.5 USD per million.
const tokensOut = GEMINI_USAGE.candidatesTokenCount + GEMINI_USAGE.thoughtsTokenCount;
const cost = (GEMINI_USAGE.promptTokenCount * 0.3 + tokensOut * 2.5) / 1e6;

beforeAll(async () => {
  h = await startHarness();
  ai = new GoogleGenAI({ apiKey: "gemini-fake", httpOptions: { baseUrl: h.provider.url } });
});
afterAll(() => h.close());
beforeEach(async () => {
  h.provider.scenario = { kind: "ok" };
  await h.traces();
});

describe("models", () => {
  it("patches both the CommonJS and the ESM build", () => {
    expect(stats().instrumented).toEqual(expect.arrayContaining(["@google/genai (cjs)", "@google/genai (esm)"]));
  });

  it("traces generateContent", async () => {
    const response = await ai.models.generateContent(request);
    expect(response.text).toBe("Hello there!");
    expect(await h.traces()).toEqual([
      expect.objectContaining({
        provider: "gemini",
        model: "gemini-2.5-flash",
        tokens_in: GEMINI_USAGE.promptTokenCount,
        tokens_out: tokensOut,
        cost_usd: cost,
        status: "success",
      }),
    ]);
  });

  it("traces chats, which call generateContent", async () => {
    const chat = ai.chats.create({ model: "gemini-2.0-flash" });
    await chat.sendMessage({ message: "Say hello" });
    expect(await h.traces()).toMatchObject([{ model: "gemini-2.0-flash", tokens_in: 8, tokens_out: tokensOut }]);
  });

  it("traces generateContentStream read to the end, from the last usage totals", async () => {
    let text = "";
    for await (const chunk of await ai.models.generateContentStream(request)) text += chunk.text;
    expect(text).toBe("Hello there!");
    expect(await h.traces()).toMatchObject([
      { tokens_in: 8, tokens_out: tokensOut, cost_usd: cost, status: "success" },
    ]);
  });

  it("traces a stream the caller breaks out of, with the usage seen so far", async () => {
    for await (const _ of await ai.models.generateContentStream(request)) break;
    expect(await h.traces()).toMatchObject([{ status: "success", tokens_in: 8, tokens_out: 0 }]);
  });

  it("traces a stream whose connection drops as an error and rethrows", async () => {
    h.provider.scenario = { kind: "stream-cut", after: 2 };
    const stream = await ai.models.generateContentStream(request);
    await expect(
      (async () => {
        for await (const _ of stream);
      })(),
    ).rejects.toThrow();
    expect(await h.traces()).toMatchObject([{ status: "error", tokens_in: 8, tokens_out: 6 }]);
  });

  it("traces an error sent mid-stream", async () => {
    h.provider.scenario = { kind: "stream-error", after: 1 };
    const stream = await ai.models.generateContentStream(request);
    await expect(
      (async () => {
        for await (const _ of stream);
      })(),
    ).rejects.toThrow(/overloaded/);
    expect(await h.traces()).toMatchObject([{ status: "error", error: expect.stringContaining("overloaded") }]);
  });

  it.each([400, 429, 500, 503])("traces a %i as an error and rethrows the library's error", async (status) => {
    h.provider.scenario = { kind: "status", status };
    const error = await ai.models.generateContent(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(status);
    const [trace] = await h.traces();
    expect(trace).toMatchObject({ provider: "gemini", model: "gemini-2.5-flash", status: "error", cost_usd: 0 });
    expect(trace!.error).toContain((error as Error).message);
  });

  it("traces a failed stream request", async () => {
    h.provider.scenario = { kind: "status", status: 400 };
    await expect(ai.models.generateContentStream(request)).rejects.toBeInstanceOf(ApiError);
    expect(await h.traces()).toMatchObject([{ status: "error" }]);
  });
});

describe("billing modes and embeddings", () => {
  const table = (models as { models: { gemini: Record<string, any> } }).models.gemini;
  const p = table["gemini-2.5-flash"];
  const audioPrompt = [
    {
      role: "user",
      parts: [{ text: "Transcribe this" }, { inlineData: { mimeType: "audio/wav", data: "UklGRiQAAABXQVZF" } }],
    },
  ];

  it("traces the audio part of the prompt from its modality details and prices it at the audio rate", async () => {
    for (const stream of [false, true]) {
      const params = { model: "gemini-2.5-flash", contents: audioPrompt };
      if (stream) for await (const _ of await ai.models.generateContentStream(params));
      else await ai.models.generateContent(params);
      const { text, audio } = GEMINI_AUDIO_USAGE;
      const [trace] = await h.traces();
      expect(trace).toMatchObject({ tokens_in: text + audio, tokens_audio_in: audio });
      expect(trace?.cost_usd).toBe((text * p.input + audio * p.input_audio + tokensOut * p.output) / 1e6);
    }
  });

  it("traces the tier from trafficType: priority is sent, and unpriced where the table has no priority rate", async () => {
    await ai.models.generateContent({ ...request, config: { labels: { traffic: "priority" } } });
    const [trace] = await h.traces();
    expect(trace).toMatchObject({ service_tier: "priority", cost_usd: 0 });
    expect(p.service_tiers?.priority).toBeUndefined();
    expect(h.warnings.join("\n")).toContain("gemini/gemini-2.5-flash");
    // ON_DEMAND is standard: not sent, standard rates.
    await ai.models.generateContent(request);
    const [standard] = await h.traces();
    expect(standard).not.toHaveProperty("service_tier");
    expect(standard?.cost_usd).toBe(cost);
  });

  // Google's Gemini API pricing: grounded prompts of Gemini 2.x, search queries of Gemini 3.
  it.each([
    { model: "gemini-2.5-flash", searches: 1 },
    { model: "gemini-3-flash-preview", searches: GEMINI_SEARCH_QUERIES.length },
  ])(
    "traces grounding with Google Search of $model as $searches billed searches, whole and streamed",
    async ({ model, searches }) => {
      const r = table[model];
      const expected =
        (GEMINI_USAGE.promptTokenCount * r.input + tokensOut * r.output) / 1e6 +
        (searches * r.web_search_per_1k) / 1000;
      for (const stream of [false, true]) {
        const params = { model, contents: "Who won Euro 2024?", config: { tools: [{ googleSearch: {} }] } };
        let text = "";
        if (stream) for await (const chunk of await ai.models.generateContentStream(params)) text += chunk.text;
        else text = (await ai.models.generateContent(params)).text ?? "";
        expect(text).toBe("Hello there!");
        const [trace] = await h.traces();
        expect(trace).toMatchObject({ model, web_search_requests: searches, status: "success" });
        expect(Math.abs(trace!.cost_usd / expected - 1)).toBeLessThan(0.01);
      }
      // Without the tool: no grounding, nothing sent.
      await ai.models.generateContent({ model, contents: "Say hello" });
      expect((await h.traces())[0]).not.toHaveProperty("web_search_requests");
    },
  );

  it("traces embedContent; the Gemini API reports no token counts, so its usage is marked missing", async () => {
    const result = await ai.models.embedContent({
      model: "gemini-embedding-001",
      contents: "What is the meaning of life?",
    });
    expect(result.embeddings?.[0]?.values?.length).toBeGreaterThan(0);
    expect(await h.traces()).toMatchObject([
      {
        provider: "gemini",
        model: "gemini-embedding-001",
        tokens_in: 0,
        cost_usd: 0,
        status: "success",
        metadata: { "calltrace.usage": "missing" },
      },
    ]);
    expect(table["gemini-embedding-001"].input).toBeGreaterThan(0);
  });
});
