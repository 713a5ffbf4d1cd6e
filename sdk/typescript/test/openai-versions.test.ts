import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openaiInstrumentation } from "../src/openai-instrumentation.js";
import { PriceTable } from "../src/price-table.js";
import type { Trace } from "../src/trace.js";
import { TraceRecorder } from "../src/trace-recorder.js";
import { FakeProvider } from "./support/fake-provider.js";

// The SDK patches whatever major version of openai the application has; the
// main suite runs 6.x, this checks the oldest (4.x) and newest (7.x) majors
// through the same instrumentation.
const require = createRequire(import.meta.url);
const messages = [{ role: "user", content: "hi" }];
let provider: FakeProvider;

beforeAll(async () => {
  provider = await FakeProvider.start();
});
afterAll(() => provider.close());

describe.each(["openai-v4", "openai-v7"])("%s", (packageName) => {
  const traces: Trace[] = [];
  const recorder = new TraceRecorder({
    apiKey: "ct_test",
    prices: new PriceTable(),
    send: (trace) => traces.push(trace),
    warn: () => {},
  });
  const module = require(packageName);
  let undo: Array<() => void> = [];
  let client: any;

  beforeAll(() => {
    undo = openaiInstrumentation.patch(module, recorder);
    client = new module.OpenAI({ apiKey: "sk-fake", baseURL: `${provider.url}/v1`, maxRetries: 0 });
  });
  afterAll(() => {
    for (const u of undo) u();
  });

  it("patches chat completions, responses and embeddings", () => {
    expect(undo).toHaveLength(3);
  });

  it("traces a chat completion, a stream and a response", async () => {
    traces.length = 0;
    await client.chat.completions.create({ model: "gpt-4o", messages });
    const stream = await client.chat.completions.create({
      model: "gpt-4o-mini",
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const _ of stream);
    await client.responses.create({ model: "gpt-4.1", input: "hi" });
    expect(traces).toMatchObject([
      {
        model: "gpt-4o-2024-08-06",
        tokens_in: 19,
        tokens_out: 10,
        cost_usd: (19 * 2.5 + 10 * 10) / 1e6,
        status: "success",
      },
      { model: "gpt-4o-mini", tokens_in: 19, tokens_out: 10, status: "success" },
      { model: "gpt-4.1", tokens_in: 36, tokens_out: 87, status: "success" },
    ]);
  });

  it("traces an HTTP error and rethrows the library's error", async () => {
    traces.length = 0;
    provider.scenario = { kind: "status", status: 429 };
    try {
      await expect(client.chat.completions.create({ model: "gpt-4o", messages })).rejects.toBeInstanceOf(
        module.OpenAI.RateLimitError,
      );
    } finally {
      provider.scenario = { kind: "ok" };
    }
    await new Promise((resolve) => setImmediate(resolve));
    expect(traces).toMatchObject([{ status: "error", error: expect.stringContaining("Rate limit reached") }]);
  });
});
