import type Anthropic from "@anthropic-ai/sdk";
import type { GoogleGenAI } from "@google/genai";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { azureClientFor, clientsFor } from "./support/clients.js";
import { startHarness, type Harness } from "./support/harness.js";

// Time to first token for every stream shape, streams that are never read or
// are dropped half-read, cancellations, and OpenAI-compatible servers.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

let h: Harness;
let openai: OpenAI;
let anthropic: Anthropic;
let gemini: GoogleGenAI;
const messages = [{ role: "user" as const, content: "Say hello" }];
const claude = { model: "claude-haiku-4-5", max_tokens: 64, messages };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  h = await startHarness();
  ({ openai, anthropic, gemini } = clientsFor(h.provider.url));
});
afterAll(() => h.close());
beforeEach(async () => {
  h.provider.scenario = { kind: "ok" };
  h.provider.delays = { responseMs: 0, eventMs: 0 };
  await h.traces();
  h.warnings.length = 0;
});

async function drain(stream: AsyncIterable<unknown>) {
  for await (const _ of stream);
}

describe("time to first token", () => {
  // Events arrive 40 ms apart. OpenAI chat and Gemini send content in their
  // 2nd event, Anthropic in its 4th (after message_start, content_block_start
  // and ping), OpenAI responses in its 5th (after four bookkeeping events).
  const shapes: Array<[string, number, () => Promise<unknown>]> = [
    [
      "openai chat create({ stream: true })",
      1,
      async () => drain(await openai.chat.completions.create({ model: "gpt-4o", messages, stream: true })),
    ],
    [
      "openai chat.completions.stream()",
      1,
      () => openai.chat.completions.stream({ model: "gpt-4o", messages }).finalChatCompletion(),
    ],
    [
      "openai responses create({ stream: true })",
      4,
      async () => drain(await openai.responses.create({ model: "gpt-4o", input: "hi", stream: true })),
    ],
    ["openai responses.stream()", 4, () => openai.responses.stream({ model: "gpt-4o", input: "hi" }).finalResponse()],
    [
      "anthropic create({ stream: true })",
      3,
      async () => drain(await anthropic.messages.create({ ...claude, stream: true })),
    ],
    ["anthropic messages.stream()", 3, () => anthropic.messages.stream(claude).finalMessage()],
    [
      "gemini generateContentStream",
      0,
      async () => drain(await gemini.models.generateContentStream({ model: "gemini-2.5-flash", contents: "hi" })),
    ],
  ];

  it.each(shapes)("%s", async (_name, eventsBefore, run) => {
    h.provider.delays.eventMs = 40;
    await run();
    const [trace] = await h.traces();
    expect(Number.isInteger(trace!.ttft_ms)).toBe(true);
    expect(trace!.ttft_ms).toBeGreaterThanOrEqual(eventsBefore * 40 - 5);
    expect(trace!.ttft_ms).toBeLessThanOrEqual(trace!.latency_ms - 35); // at least one more event came after
  });

  it("is not set for a call that is not streamed", async () => {
    await openai.chat.completions.create({ model: "gpt-4o", messages });
    expect((await h.traces())[0]).not.toHaveProperty("ttft_ms");
  });
});

/** Collects garbage until the SDK has sent `count` traces. */
async function collectUntilTraced(count: number) {
  for (let i = 0; i < 50 && h.service.received.length < count; i++) {
    gc();
    await sleep(20);
    await h.traces().then((got) => h.service.received.push(...got.map((body) => ({ body }) as any)));
  }
  return h.traces();
}

describe("a stream that is never read to its end", () => {
  it("is traced when it is garbage-collected unread, with its usage marked missing", async () => {
    await (async () => {
      await openai.chat.completions.create({ model: "gpt-4o", messages, stream: true });
      await anthropic.messages.create({ ...claude, stream: true });
      await gemini.models.generateContentStream({ model: "gemini-2.5-flash", contents: "hi" });
    })();
    const traces = await collectUntilTraced(3);
    expect(traces).toHaveLength(3);
    for (const trace of traces) {
      expect(trace).toMatchObject({ status: "success", tokens_in: 0, metadata: { "calltrace.usage": "missing" } });
    }
  });

  it("is traced with the usage seen when its half-read iterator is dropped", async () => {
    await (async () => {
      const stream = await anthropic.messages.create({ ...claude, stream: true });
      const iterator = stream[Symbol.asyncIterator]();
      await iterator.next(); // message_start: the input counts
    })();
    const [trace, ...more] = await collectUntilTraced(1);
    expect(more).toEqual([]);
    expect(trace).toMatchObject({ status: "success", tokens_in: 40, tokens_out: 1 });
    expect(trace).not.toHaveProperty("metadata");
  });

  it("is not traced early while it is being read", async () => {
    h.provider.delays.eventMs = 30;
    const reading = (async () => {
      for await (const _ of await openai.chat.completions.create({ model: "gpt-4o", messages, stream: true }));
    })();
    for (let i = 0; i < 5; i++) {
      gc();
      await sleep(20);
    }
    await reading;
    const [trace, ...more] = await h.traces();
    expect(more).toEqual([]);
    expect(trace!.latency_ms).toBeGreaterThanOrEqual(100); // it ended with the stream, not at a collection
  });
});

describe("a call the application cancels", () => {
  it("is a success with the usage seen, for every provider, and the library's error still reaches the caller", async () => {
    h.provider.delays.eventMs = 30;
    /** Reads `stream` and aborts `controller` once its first item is in; what the library then throws, if anything. */
    const abortAfterFirst = async (stream: AsyncIterable<unknown>, controller: AbortController) => {
      try {
        for await (const _ of stream) controller.abort();
      } catch (error) {
        return error;
      }
    };
    const openaiAbort = new AbortController();
    const openaiStream = await openai.chat.completions.create(
      { model: "gpt-4o", messages, stream: true },
      { signal: openaiAbort.signal },
    );
    await abortAfterFirst(openaiStream, openaiAbort);
    const claudeAbort = new AbortController();
    const claudeStream = await anthropic.messages.create({ ...claude, stream: true }, { signal: claudeAbort.signal });
    await abortAfterFirst(claudeStream, claudeAbort);
    const geminiAbort = new AbortController();
    const geminiStream = await gemini.models.generateContentStream({
      model: "gemini-2.5-flash",
      contents: "hi",
      config: { abortSignal: geminiAbort.signal },
    });
    const geminiError = await abortAfterFirst(geminiStream, geminiAbort);
    expect(geminiError).toBeInstanceOf(Error);
    const controller = () => {
      const c = new AbortController();
      setTimeout(() => c.abort(), 50);
      return c.signal;
    };
    h.provider.delays = { responseMs: 200, eventMs: 0 };
    const openaiError = await openai.chat.completions
      .create({ model: "gpt-4o", messages }, { signal: controller() })
      .catch((e: unknown) => e);
    expect(openaiError).toBeInstanceOf(OpenAI.APIUserAbortError);
    const traces = await h.traces();
    expect(traces.map((t) => [t.provider, t.status])).toEqual([
      ["openai", "success"],
      ["anthropic", "success"],
      ["gemini", "success"],
      ["openai", "success"],
    ]);
    expect(traces[1]).toMatchObject({ tokens_in: 40 }); // message_start came before the abort
    expect(traces[2]).toMatchObject({ tokens_in: 8 }); // so did Gemini's first chunk
    expect(traces[3]).toMatchObject({ tokens_in: 0, metadata: { "calltrace.usage": "missing" } });
  });
});

describe("errors", () => {
  it("carry the class name of the library's error", async () => {
    h.provider.scenario = { kind: "status", status: 429 };
    await openai.chat.completions.create({ model: "gpt-4o", messages }).catch(() => {});
    await anthropic.messages.create(claude).catch(() => {});
    await gemini.models.generateContent({ model: "gemini-2.5-flash", contents: "hi" }).catch(() => {});
    const errors = (await h.traces()).map((t) => t.error);
    expect(errors).toEqual([
      expect.stringMatching(/^RateLimitError: 429 /),
      expect.stringMatching(/^RateLimitError: 429 /),
      expect.stringMatching(/^ApiError: /),
    ]);
  });
});

describe("OpenAI-compatible servers", () => {
  it("Azure OpenAI is asked for stream usage, and its usage chunk is hidden from the caller", async () => {
    const azure = azureClientFor(h.provider.url);
    const chunks = [];
    for await (const chunk of await azure.chat.completions.create({ model: "gpt-4o", messages, stream: true })) {
      chunks.push(chunk);
    }
    expect(h.provider.requests.at(-1)?.body.stream_options).toEqual({ include_usage: true });
    expect(chunks.every((c) => c.usage === undefined)).toBe(true);
    expect(await h.traces()).toMatchObject([{ tokens_in: 19, tokens_out: 10 }]);
    expect(h.warnings).toEqual([]);
  });

  it("others are not asked: their streams are marked as missing usage, with one warning per server", async () => {
    // "localhost": a server no other test here has streamed from, so its one warning is still to come.
    const local = new OpenAI({ apiKey: "sk-fake", baseURL: `${h.provider.url.replace("127.0.0.1", "localhost")}/v1` });
    for (let i = 0; i < 2; i++)
      await drain(await local.chat.completions.create({ model: "gpt-4o", messages, stream: true }));
    expect(h.provider.requests.at(-1)?.body).not.toHaveProperty("stream_options");
    expect(await h.traces()).toMatchObject([
      { tokens_in: 0, metadata: { "calltrace.usage": "missing" } },
      { tokens_in: 0, metadata: { "calltrace.usage": "missing" } },
    ]);
    expect(h.warnings).toEqual([expect.stringContaining("from localhost carry no usage unless asked")]);
  });

  it("whose stream the caller asked for usage are traced with it, and without a warning", async () => {
    await drain(
      await openai.chat.completions.create({
        model: "gpt-4o",
        messages,
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    expect(await h.traces()).toMatchObject([{ tokens_in: 19 }]);
    expect(h.warnings).toEqual([]);
  });
});
