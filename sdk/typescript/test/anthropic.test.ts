import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { stats } from "../src/index.js";
import models from "../../pricing/models.json" with { type: "json" };
import { ANTHROPIC_1H_WRITES, ANTHROPIC_USAGE, ANTHROPIC_WEB_SEARCHES } from "./support/anthropic-fixtures.js";
import { startHarness, type Harness } from "./support/harness.js";

let h: Harness;
let client: Anthropic;
const request = {
  model: "claude-sonnet-4-20250514",
  max_tokens: 64,
  messages: [{ role: "user" as const, content: "Say hello" }],
};
// Input is uncached + cache writes + cache reads; claude-sonnet-4 costs 3 in, 0.3 cache reads, 3.75
// cache writes and 15 out, USD per million.
const tokensIn =
  ANTHROPIC_USAGE.input_tokens + ANTHROPIC_USAGE.cache_creation_input_tokens + ANTHROPIC_USAGE.cache_read_input_tokens;
const cost =
  (ANTHROPIC_USAGE.input_tokens * 3 +
    ANTHROPIC_USAGE.cache_read_input_tokens * 0.3 +
    ANTHROPIC_USAGE.cache_creation_input_tokens * 3.75 +
    ANTHROPIC_USAGE.output_tokens * 15) /
  1e6;

beforeAll(async () => {
  h = await startHarness();
  client = new Anthropic({ apiKey: "sk-ant-fake", baseURL: h.provider.url, maxRetries: 0 });
});
afterAll(() => h.close());
beforeEach(async () => {
  h.provider.scenario = { kind: "ok" };
  await h.traces();
});

describe("messages", () => {
  it("patches both the CommonJS and the ESM build", () => {
    expect(stats().instrumented).toEqual(
      expect.arrayContaining(["@anthropic-ai/sdk (cjs)", "@anthropic-ai/sdk (esm)"]),
    );
  });

  it("traces messages.create with cache reads and writes counted as input", async () => {
    const message = await client.messages.create(request);
    expect(message.content[0]).toMatchObject({ text: "Hello there!" });
    expect(await h.traces()).toEqual([
      expect.objectContaining({
        provider: "anthropic",
        model: "claude-sonnet-4-20250514",
        tokens_in: tokensIn,
        tokens_out: ANTHROPIC_USAGE.output_tokens,
        cost_usd: cost,
        status: "success",
      }),
    ]);
  });

  it("traces beta.messages.create", async () => {
    await client.beta.messages.create(request);
    expect(await h.traces()).toMatchObject([{ tokens_in: tokensIn, tokens_out: 15, cost_usd: cost }]);
  });

  it("traces create({ stream: true }) read to the end", async () => {
    const stream = await client.messages.create({ ...request, stream: true });
    const types = [];
    for await (const event of stream) types.push(event.type);
    expect(types).toContain("message_stop");
    expect(await h.traces()).toMatchObject([
      { tokens_in: tokensIn, tokens_out: 15, cost_usd: cost, status: "success" },
    ]);
  });

  it("traces the messages.stream() helper once", async () => {
    const message = await client.messages.stream(request).finalMessage();
    expect(message.usage.output_tokens).toBe(15);
    expect(await h.traces()).toMatchObject([{ tokens_in: tokensIn, tokens_out: 15 }]);
  });

  it("traces a stream the caller breaks out of with the input seen in message_start", async () => {
    const stream = await client.messages.create({ ...request, stream: true });
    for await (const event of stream) if (event.type === "content_block_start") break;
    expect(await h.traces()).toMatchObject([{ status: "success", tokens_in: tokensIn, tokens_out: 1 }]);
  });

  it("traces an error event mid-stream as an error and rethrows the library's error", async () => {
    h.provider.scenario = { kind: "stream-error", after: 2 };
    const stream = await client.messages.create({ ...request, stream: true });
    const error = await (async () => {
      for await (const _ of stream);
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect(await h.traces()).toMatchObject([
      { status: "error", tokens_in: tokensIn, error: expect.stringContaining("Overloaded") },
    ]);
  });

  it.each([400, 401, 429, 500, 529])("traces a %i as an error and rethrows the library's error", async (status) => {
    h.provider.scenario = { kind: "status", status };
    const error = await client.messages.create(request).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect((error as InstanceType<typeof Anthropic.APIError>).status).toBe(status);
    const [trace] = await h.traces();
    expect(trace).toMatchObject({ provider: "anthropic", status: "error", tokens_in: 0, cost_usd: 0 });
    expect(trace!.error).toContain((error as Error).message);
  });
});

describe("billing modes", () => {
  const messages = [{ role: "user" as const, content: "What changed in the news today?" }];
  const p = (models as { models: { anthropic: Record<string, any> } }).models.anthropic["claude-sonnet-4-5"];
  const {
    input_tokens: uncached,
    cache_read_input_tokens: read,
    cache_creation_input_tokens: written,
    output_tokens: out,
  } = ANTHROPIC_USAGE;

  it("traces 1-hour cache writes and web searches from usage, each priced at its own rate", async () => {
    const system = [
      {
        type: "text" as const,
        text: "A long manual…",
        cache_control: { type: "ephemeral" as const, ttl: "1h" as const },
      },
    ];
    const tools = [{ type: "web_search_20250305" as const, name: "web_search" as const, max_uses: 3 }];
    for (const stream of [false, true]) {
      const made = client.messages.create({
        model: "claude-sonnet-4-5",
        max_tokens: 64,
        system,
        tools,
        messages,
        stream,
      });
      if (stream) for await (const _ of (await made) as AsyncIterable<unknown>);
      else await made;
      const [trace] = await h.traces();
      expect(trace).toMatchObject({
        tokens_cache_write: written,
        tokens_cache_write_1h: ANTHROPIC_1H_WRITES,
        web_search_requests: ANTHROPIC_WEB_SEARCHES,
      });
      expect(trace?.cost_usd).toBe(
        (uncached * p.input +
          read * p.cached_input +
          (written - ANTHROPIC_1H_WRITES) * p.cache_write +
          ANTHROPIC_1H_WRITES * p.cache_write_1h +
          out * p.output) /
          1e6 +
          (ANTHROPIC_WEB_SEARCHES * p.web_search_per_1k) / 1000,
      );
    }
  });

  it("sends neither when the call had none (5-minute writes only, no searches)", async () => {
    await client.messages.create({ model: "claude-sonnet-4-5", max_tokens: 64, messages });
    const [trace] = await h.traces();
    expect(trace).not.toHaveProperty("tokens_cache_write_1h");
    expect(trace).not.toHaveProperty("web_search_requests");
    expect(trace).not.toHaveProperty("service_tier"); // usage.service_tier "standard"
  });
});
