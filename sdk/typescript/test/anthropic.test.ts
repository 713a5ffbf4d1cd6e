import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { stats } from "../src/index.js";
import { ANTHROPIC_USAGE } from "./support/anthropic-fixtures.js";
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
