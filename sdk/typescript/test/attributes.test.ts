import type Anthropic from "@anthropic-ai/sdk";
import type { GoogleGenAI } from "@google/genai";
import type OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { withAttributes, withCallAttributes } from "../src/index.js";
import { clientsFor } from "./support/clients.js";
import { startHarness, type Harness } from "./support/harness.js";

// Three levels, each overriding the one before: init() defaults, a
// withAttributes() scope, and one call's own attributes.
let h: Harness;
let openai: OpenAI;
let anthropic: Anthropic;
let gemini: GoogleGenAI;
const messages = [{ role: "user" as const, content: "hi" }];
const chat = () => openai.chat.completions.create({ model: "gpt-4o", messages });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  h = await startHarness({ environment: "staging", tags: ["web"], metadata: { team: "search", region: "eu" } });
  ({ openai, anthropic, gemini } = clientsFor(h.provider.url));
});
afterAll(() => h.close());
beforeEach(async () => {
  await h.traces();
  h.warnings.length = 0;
  h.provider.requests.length = 0;
});

describe("init() defaults", () => {
  it("are on every trace", async () => {
    await chat();
    const [trace] = await h.traces();
    expect(trace).toMatchObject({ environment: "staging", tags: ["web"], metadata: { team: "search", region: "eu" } });
    expect(trace).not.toHaveProperty("user_id");
  });
});

describe("withAttributes()", () => {
  it("adds a user and session, unites tags and overrides metadata keys", async () => {
    await withAttributes(
      { userId: "u_42", sessionId: "s_1", tags: ["checkout", "web"], metadata: { region: "us" } },
      chat,
    );
    expect(await h.traces()).toEqual([
      expect.objectContaining({
        user_id: "u_42",
        session_id: "s_1",
        environment: "staging",
        tags: ["web", "checkout"],
        metadata: { team: "search", region: "us" },
      }),
    ]);
  });

  it("holds across await, timers and Promise.all, each branch in its own scope", async () => {
    const user = (id: string) =>
      withAttributes({ userId: id }, async () => {
        await sleep(5);
        await chat();
        await new Promise<void>((resolve) => setTimeout(() => void chat().then(() => resolve()), 5));
        await Promise.all([chat(), sleep(1).then(chat)]);
      });
    await Promise.all([user("alice"), user("bob"), chat()]);
    const traces = await h.traces();
    expect(traces).toHaveLength(9);
    const users = traces.map((t) => t.user_id ?? "none").sort();
    expect(users).toEqual(["alice", "alice", "alice", "alice", "bob", "bob", "bob", "bob", "none"]);
  });

  it("nests: the inner scope merges onto the outer and ends with its function", async () => {
    await withAttributes({ userId: "outer", sessionId: "s_outer", tags: ["a"], metadata: { step: "1" } }, async () => {
      await withAttributes({ sessionId: "s_inner", tags: ["b"], metadata: { step: "2", tool: "x" } }, chat);
      await chat();
    });
    const [inner, outer] = await h.traces();
    expect(inner).toMatchObject({
      user_id: "outer",
      session_id: "s_inner",
      tags: ["web", "a", "b"],
      metadata: { team: "search", region: "eu", step: "2", tool: "x" },
    });
    expect(outer).toMatchObject({
      user_id: "outer",
      session_id: "s_outer",
      tags: ["web", "a"],
      metadata: { step: "1" },
    });
  });

  it("returns what its function returns", async () => {
    expect(withAttributes({ userId: "u" }, () => 42)).toBe(42);
    await expect(withAttributes({ userId: "u" }, async () => "done")).resolves.toBe("done");
  });
});

describe("one call's attributes", () => {
  it("come from a calltrace key, which the provider never receives, and override the scope", async () => {
    const body = { model: "gpt-4o", messages, calltrace: { userId: "call-user", tags: ["retry"] } };
    await withAttributes({ userId: "scope-user", sessionId: "s" }, () =>
      // A JavaScript caller's extra key: TypeScript callers use withCallAttributes() instead.
      openai.chat.completions.create(body as Parameters<typeof openai.chat.completions.create>[0]),
    );
    expect(h.provider.requests.at(-1)?.body).not.toHaveProperty("calltrace");
    expect(body.calltrace).toEqual({ userId: "call-user", tags: ["retry"] }); // the caller's object is left alone
    expect(await h.traces()).toMatchObject([{ user_id: "call-user", session_id: "s", tags: ["web", "retry"] }]);
  });

  it("come typed from withCallAttributes(), for each provider and stream shape", async () => {
    const attributes = { userId: "typed", metadata: { feature: "summary" } };
    await openai.chat.completions.create(withCallAttributes({ model: "gpt-4o", messages }, attributes));
    await openai.responses.create(withCallAttributes({ model: "gpt-4o", input: "hi" }, attributes));
    await openai.chat.completions
      .stream(withCallAttributes({ model: "gpt-4o", messages }, attributes))
      .finalChatCompletion();
    await anthropic.messages.create(
      withCallAttributes({ model: "claude-haiku-4-5", max_tokens: 8, messages }, attributes),
    );
    await anthropic.messages
      .stream(withCallAttributes({ model: "claude-haiku-4-5", max_tokens: 8, messages }, attributes))
      .finalMessage();
    await gemini.models.generateContent(withCallAttributes({ model: "gemini-2.5-flash", contents: "hi" }, attributes));
    for await (const _ of await gemini.models.generateContentStream(
      withCallAttributes({ model: "gemini-2.5-flash", contents: "hi", config: { temperature: 0 } }, attributes),
    ));
    const traces = await h.traces();
    expect(traces).toHaveLength(7);
    for (const trace of traces) {
      expect(trace).toMatchObject({ user_id: "typed", metadata: { team: "search", feature: "summary" } });
    }
    for (const request of h.provider.requests) expect(JSON.stringify(request.body)).not.toContain("typed");
  });

  it("reach a Gemini call whose config the library rebuilds (tools)", async () => {
    const config = { tools: [{ functionDeclarations: [{ name: "noop", description: "does nothing" }] }] };
    await gemini.models.generateContent(
      withCallAttributes({ model: "gemini-2.5-flash", contents: "hi", config }, { sessionId: "with-tools" }),
    );
    expect(await h.traces()).toMatchObject([{ session_id: "with-tools" }]);
  });

  it("are also read from a calltrace key in Gemini's config", async () => {
    const config = { temperature: 0, calltrace: { userId: "in-config" } };
    await gemini.models.generateContent({ model: "gemini-2.5-flash", contents: "hi", config } as any);
    expect(await h.traces()).toMatchObject([{ user_id: "in-config" }]);
  });
});

describe("values the service would refuse", () => {
  it("are cut or left out with one warning per kind, and the trace is still sent", async () => {
    const tags = Array.from({ length: 25 }, (_, i) => `tag-${i}`);
    const metadata: Record<string, string> = { "bad key!": "x", long: "v".repeat(600) };
    for (let i = 0; i < 40; i++) metadata[`k${i}`] = String(i);
    const attributes = {
      userId: "😀".repeat(300),
      sessionId: "s".repeat(300),
      tags: [...tags, "x".repeat(70)],
      metadata,
    };
    for (let i = 0; i < 2; i++) await withAttributes(attributes, chat);
    const [trace, second] = await h.traces();
    // The same attributes, cut the same way; only the time and length of each call differ.
    expect({ ...second, latency_ms: 0, called_at: "" }).toEqual({ ...trace, latency_ms: 0, called_at: "" });
    expect(Array.from(trace!.user_id)).toHaveLength(256); // characters, as the service counts them
    expect(trace!.user_id).toBe("😀".repeat(256));
    expect(trace!.session_id).toHaveLength(256);
    expect(trace!.tags).toHaveLength(20);
    expect(trace!.tags[0]).toBe("web");
    expect(Object.keys(trace!.metadata)).toHaveLength(32);
    expect(trace!.metadata).not.toHaveProperty("bad key!");
    expect(trace!.metadata.long).toHaveLength(512);
    // One per kind: too long (user, session, tag, metadata value), too many (tags, entries), a bad key.
    expect(h.warnings).toHaveLength(7);
    expect(h.warnings.join("\n")).toMatch(/bad key!/);
  });

  it("of the wrong type are turned into strings or left out", async () => {
    await withAttributes({ metadata: ["not", "a", "map"] as unknown as Record<string, string> }, chat);
    expect((await h.traces())[0]).not.toHaveProperty("metadata");
    expect(h.warnings).toEqual([expect.stringContaining("metadata must be an object")]);
    await withAttributes({ userId: 1234 as unknown as string, tags: "solo" as unknown as string[] }, chat);
    const [trace] = await h.traces();
    expect(trace).toMatchObject({ user_id: "1234", tags: ["web", "solo"] });
  });
});
