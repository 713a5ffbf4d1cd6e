import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import http from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { flush, init, shutdown, stats, withAttributes, withCallAttributes } from "../src/index.js";
import { CalltraceServer } from "./support/calltrace-server.js";
import { FakeProvider } from "./support/fake-provider.js";

// Against the real server from this repository: what the SDK sends is what
// the server stores. The server must exist; this test fails without it.
let server: CalltraceServer;
// The server answers 503 while its store cannot commit in time (D13), which
// happens on a busy machine: retry for as long as the test may take.
const patient = { retryBaseDelayMs: 50, retryMaxDelayMs: 2_000, maxAttempts: 40 };
let provider: FakeProvider;
let key: string;

beforeAll(async () => {
  CalltraceServer.assertAvailable();
  server = new CalltraceServer();
  key = (await server.run("keys", "create", "--plan", "free")).trim();
  await server.start();
  provider = await FakeProvider.start();
}, 60_000);

afterAll(async () => {
  await shutdown(1_000);
  await provider?.close();
  await server?.stop();
  server?.remove();
});

async function storedTraces(): Promise<Array<Record<string, any>>> {
  const lines = (await server.run("traces", "export", "--format", "jsonl")).trim().split("\n");
  return lines.filter(Boolean).map((line) => JSON.parse(line));
}

/**
 * A proxy that passes requests to the server but, for the first one, drops
 * the connection after the server has answered: the trace is stored, the SDK
 * sees a network error and retries it.
 */
async function lossyProxy(target: string) {
  let first = true;
  let requests = 0;
  const proxy = http.createServer((request, response) => {
    requests++;
    const upstream = http.request(target, { method: "POST", headers: request.headers }, (answer) => {
      if (first) {
        first = false;
        answer.resume();
        answer.on("end", () => request.socket.destroy());
        return;
      }
      response.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(response);
    });
    request.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1/traces`,
    requests: () => requests,
    close: () => proxy.close(),
  };
}

describe("end to end with the calltrace server", { timeout: 60_000 }, () => {
  it("stores each call's trace as the SDK measured it", async () => {
    await init({ apiKey: key, endpoint: server.endpoint, ...patient });
    const openai = new OpenAI({ apiKey: "sk-fake", baseURL: `${provider.url}/v1`, maxRetries: 0 });
    const anthropic = new Anthropic({ apiKey: "sk-fake", baseURL: provider.url, maxRetries: 0 });
    const gemini = new GoogleGenAI({ apiKey: "fake", httpOptions: { baseUrl: provider.url } });
    const messages = [{ role: "user" as const, content: "Say hello" }];

    await openai.chat.completions.create({ model: "gpt-4o", messages });
    for await (const _ of await anthropic.messages.create({
      model: "claude-opus-4-5",
      max_tokens: 8,
      messages,
      stream: true,
    }));
    provider.scenario = { kind: "status", status: 400 };
    await expect(gemini.models.generateContent({ model: "gemini-2.5-pro", contents: "hi" })).rejects.toThrow();
    provider.scenario = { kind: "ok" };

    expect(await flush(40_000)).toBe(true);
    expect(stats()).toMatchObject({ sent: 3, failed: 0, dropped: 0 });

    const stored = await storedTraces();
    const byProvider = Object.fromEntries(stored.map((t) => [t.provider, t]));
    expect(stored).toHaveLength(3);
    expect(byProvider.openai).toMatchObject({
      model: "gpt-4o-2024-08-06",
      tokens_in: 19,
      tokens_out: 10,
      cost_usd: (19 * 2.5 + 10 * 10) / 1e6,
      status: "success",
    });
    expect(byProvider.anthropic).toMatchObject({
      model: "claude-opus-4-5",
      tokens_in: 40,
      tokens_out: 15,
      // 25 uncached, 10 cache reads, 5 cache writes: 5, 0.5, 6.25 and 25 out per million.
      cost_usd: (25 * 5 + 10 * 0.5 + 5 * 6.25 + 15 * 25) / 1e6,
      status: "success",
    });
    expect(byProvider.gemini).toMatchObject({ model: "gemini-2.5-pro", tokens_in: 0, cost_usd: 0, status: "error" });
    expect(byProvider.gemini.error).toContain("API key not valid");
    for (const trace of stored) {
      // The server prices each call itself with the same table and rule: to the bit.
      expect(trace).toMatchObject({ price_check: "PRICE_CHECK_MATCH", server_cost_usd: trace.cost_usd });
      expect(Number.isInteger(trace.latency_ms)).toBe(true);
      expect(trace.key_id).toEqual(expect.any(String));
      expect(trace.received_at).toEqual(expect.any(String));
      expect(trace).not.toHaveProperty("api_key");
    }
  });

  it("stores the cache and reasoning counts, time to first token and attributes, even ones made to fit", async () => {
    const before = (await storedTraces()).length;
    await init({
      apiKey: key,
      endpoint: server.endpoint,
      ...patient,
      environment: "e2e",
      tags: ["sdk"],
      metadata: { team: "platform" },
      onWarning: () => {},
    });
    const anthropic = new Anthropic({ apiKey: "sk-fake", baseURL: provider.url, maxRetries: 0 });
    const gemini = new GoogleGenAI({ apiKey: "fake", httpOptions: { baseUrl: provider.url } });
    const tooMany = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, "v".repeat(600)]));
    await withAttributes({ userId: "u".repeat(300), sessionId: "s_1", tags: ["chat"], metadata: tooMany }, async () => {
      const request = {
        model: "claude-sonnet-4-5",
        max_tokens: 8,
        messages: [{ role: "user" as const, content: "hi" }],
      };
      for await (const _ of await anthropic.messages.create(
        withCallAttributes(
          { ...request, stream: true as const },
          { tags: Array.from({ length: 30 }, (_, i) => `t${i}`) },
        ),
      ));
      for await (const _ of await gemini.models.generateContentStream({ model: "gemini-2.5-pro", contents: "hi" }));
    });
    expect(await flush(40_000)).toBe(true);
    expect(stats()).toMatchObject({ sent: 2, failed: 0 });
    const [claude, pro] = (await storedTraces()).slice(before) as [Record<string, any>, Record<string, any>];
    expect(claude).toMatchObject({
      provider: "anthropic",
      tokens_in: 40,
      tokens_cached_in: 10,
      tokens_cache_write: 5,
      user_id: "u".repeat(256),
      session_id: "s_1",
      environment: "e2e",
    });
    expect(claude.tags).toHaveLength(20);
    expect(claude.tags.slice(0, 3)).toEqual(["sdk", "chat", "t0"]);
    expect(Object.keys(claude.metadata)).toHaveLength(32);
    expect(claude.metadata.team).toBe("platform");
    expect(claude.ttft_ms).toEqual(expect.any(Number));
    expect(pro).toMatchObject({ provider: "gemini", tokens_cached_in: 4096, tokens_reasoning: 612, tokens_out: 792 });
    expect(pro.ttft_ms).toBeLessThanOrEqual(pro.latency_ms);
    // Cache reads and writes priced as the server prices them.
    for (const trace of [claude, pro])
      expect(trace).toMatchObject({ price_check: "PRICE_CHECK_MATCH", server_cost_usd: trace.cost_usd });
  });

  it("stores Gemini grounding searches, which the server prices as the SDK does", async () => {
    const before = (await storedTraces()).length;
    await init({ apiKey: key, endpoint: server.endpoint, ...patient });
    const gemini = new GoogleGenAI({ apiKey: "fake", httpOptions: { baseUrl: provider.url } });
    const config = { tools: [{ googleSearch: {} }] };
    await gemini.models.generateContent({ model: "gemini-3-flash-preview", contents: "Who won Euro 2024?", config });
    for await (const _ of await gemini.models.generateContentStream({
      model: "gemini-2.5-flash",
      contents: "Who won Euro 2024?",
      config,
    }));
    expect(await flush(40_000)).toBe(true);
    expect(stats()).toMatchObject({ sent: 2, failed: 0 });
    const [three, two] = (await storedTraces()).slice(before) as [Record<string, any>, Record<string, any>];
    // Gemini 3: each search query (the fake runs 2); Gemini 2.x: each grounded prompt.
    expect(three).toMatchObject({ model: "gemini-3-flash-preview", web_search_requests: 2 });
    expect(two).toMatchObject({ model: "gemini-2.5-flash", web_search_requests: 1 });
    for (const trace of [three, two]) {
      expect(trace).toMatchObject({ price_check: "PRICE_CHECK_MATCH", server_cost_usd: trace.cost_usd });
      // The grounding price (14 or 35 USD per thousand) is most of the cost.
      expect(trace.cost_usd).toBeGreaterThan((trace.web_search_requests * 14) / 1000);
    }
  });

  it("stores every trace of a burst pipelined on one connection", async () => {
    const before = (await storedTraces()).length;
    await init({ apiKey: key, endpoint: server.endpoint, ...patient });
    const openai = new OpenAI({ apiKey: "sk-fake", baseURL: `${provider.url}/v1`, maxRetries: 0 });
    // 50: the free plan takes 100 requests a minute, and this file sends a few more.
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        openai.chat.completions.create({
          model: `gpt-4.1-nano-burst-${i}`,
          messages: [{ role: "user", content: "hi" }],
        }),
      ),
    );
    expect(await flush(40_000)).toBe(true);
    expect(stats()).toMatchObject({ sent: 50, failed: 0, dropped: 0 });
    const models = (await storedTraces()).slice(before).map((t) => t.model);
    expect(new Set(models).size).toBe(50);
  });

  it("stores a trace once when the SDK retries it after losing the answer", async () => {
    const proxy = await lossyProxy(server.endpoint);
    try {
      const before = (await storedTraces()).length;
      await init({ apiKey: key, endpoint: proxy.endpoint, ...patient });
      const openai = new OpenAI({ apiKey: "sk-fake", baseURL: `${provider.url}/v1`, maxRetries: 0 });
      const calledFrom = Date.now();
      await openai.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
      const calledTo = Date.now();
      expect(await flush(40_000)).toBe(true);
      expect(stats()).toMatchObject({ sent: 1, failed: 0 });
      expect(proxy.requests()).toBe(2);
      // Delivered by the retry, placed at the call's start (D58), received later.
      const [last] = (await storedTraces()).slice(-1);
      const calledAt = Date.parse(last!.called_at);
      expect(calledAt).toBeGreaterThanOrEqual(calledFrom - 1);
      expect(calledAt).toBeLessThanOrEqual(calledTo + 1);
      expect(Date.parse(last!.received_at)).toBeGreaterThanOrEqual(calledAt);
      const stored = await storedTraces();
      expect(stored).toHaveLength(before + 1);
      expect(stored.at(-1)).toMatchObject({ model: "gpt-4o-mini", tokens_in: 19 });
    } finally {
      proxy.close();
    }
  });
});
