import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  BudgetExceeded,
  flush,
  type InitOptions,
  init,
  untraced,
  withAttributes,
  withCallAttributes,
} from "../src/index.js";
import { clientsFor } from "./support/clients.js";
import { type Answer, FakeCalltrace } from "./support/fake-calltrace.js";
import { startHarness, TEST_KEY, type Harness } from "./support/harness.js";

// The real provider clients against the fake provider, and a fake service
// whose GET /v1/budget answers what each test sets.
let h: Harness;
let clients: ReturnType<typeof clientsFor>;
const REFRESH_MS = 30;
const messages = [{ role: "user" as const, content: "Say hello" }];

function exceeded(scope: object, ruleId = "r_cap") {
  return {
    status: 200,
    body: {
      projectId: "p_1",
      budgets: [
        {
          ruleId,
          name: "daily cap",
          scope,
          window: { kind: "ALERT_WINDOW_KIND_ROLLING_HOURS", rollingHours: 24 },
          budgetUsd: 5,
          spendUsd: 5.25,
          exceeded: true,
        },
      ],
    },
  };
}
const PROJECT = { kind: "ALERT_SCOPE_KIND_PROJECT" };

/** init() with enforceBudget against the harness's service, refreshing every REFRESH_MS, warnings to h.warnings, but for `options`. */
const initEnforcing = (options: InitOptions = {}) =>
  init({
    apiKey: TEST_KEY,
    endpoint: h.service.endpoint,
    onWarning: (message) => h.warnings.push(message),
    enforceBudget: true,
    budgetRefreshMs: REFRESH_MS,
    ...options,
  });

/** Sets what GET /v1/budget answers and waits until the SDK has read that answer. */
async function answerBudget(service: FakeCalltrace, answer: Answer): Promise<void> {
  service.budget = answer;
  // A refresh starts only after the previous one ended, so the second request
  // after the change means the first one's answer has been taken in.
  const seen = service.budgetRequests.length;
  const deadline = Date.now() + 10_000;
  while (service.budgetRequests.length < seen + 2) {
    if (Date.now() > deadline) throw new Error("the SDK stopped refreshing the budget status");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Runs `call` and answers the BudgetExceeded it was refused with (or fails), checking the provider was not called. */
async function refused(call: () => Promise<unknown>): Promise<BudgetExceeded> {
  const before = h.provider.requests.length;
  const error = await call().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(h.provider.requests.length).toBe(before);
  // The stream helpers (OpenAI's chat.completions.stream(), Anthropic's messages.stream())
  // wrap what create() rejects with in their library's error, as its cause.
  const wrapped = error instanceof Anthropic.AnthropicError || error instanceof OpenAI.OpenAIError;
  const cause = wrapped ? (error as Error).cause : error;
  expect(cause).toBeInstanceOf(BudgetExceeded);
  return cause as BudgetExceeded;
}

const drain = async (stream: AsyncIterable<unknown>) => {
  for await (const _ of stream);
};

beforeAll(async () => {
  h = await startHarness({ enforceBudget: true, budgetRefreshMs: REFRESH_MS });
  clients = clientsFor(h.provider.url);
});
afterAll(() => h.close());
beforeEach(async () => {
  await answerBudget(h.service, { status: 200, body: { projectId: "p_1", budgets: [] } });
  await h.traces();
  h.warnings.length = 0;
});

describe("enforceBudget with an exceeded budget", () => {
  it("refuses every instrumented method, streamed or not, without calling the provider or tracing", async () => {
    await answerBudget(h.service, exceeded(PROJECT));
    const { openai, anthropic, gemini } = clients;
    const calls: Array<() => Promise<unknown>> = [
      () => openai.chat.completions.create({ model: "gpt-4o", messages }),
      () => openai.chat.completions.create({ model: "gpt-4o", messages, stream: true }),
      () => openai.chat.completions.create({ model: "gpt-4o", messages }).withResponse(),
      () => openai.chat.completions.stream({ model: "gpt-4o", messages }).finalChatCompletion(),
      () => openai.responses.create({ model: "gpt-4o", input: "hi" }),
      () => openai.responses.create({ model: "gpt-4o", input: "hi", stream: true }),
      () => openai.embeddings.create({ model: "text-embedding-3-small", input: "hi" }),
      () => anthropic.messages.create({ model: "claude-sonnet-4-5", max_tokens: 8, messages }),
      () => anthropic.messages.create({ model: "claude-sonnet-4-5", max_tokens: 8, messages, stream: true }),
      () => anthropic.messages.stream({ model: "claude-sonnet-4-5", max_tokens: 8, messages }).finalMessage(),
      () => gemini.models.generateContent({ model: "gemini-2.5-pro", contents: "hi" }),
      () => gemini.models.generateContentStream({ model: "gemini-2.5-pro", contents: "hi" }).then(drain),
      () => gemini.models.embedContent({ model: "gemini-embedding-001", contents: "hi" }),
    ];
    for (const call of calls) {
      const error = await refused(call);
      expect(error).toMatchObject({
        name: "BudgetExceeded",
        ruleId: "r_cap",
        budgetName: "daily cap",
        scope: { kind: "project", value: "", metadataKey: "" },
        spendUsd: 5.25,
        budgetUsd: 5,
      });
      expect(error.message).toContain('budget "daily cap" for the project is exceeded ($5.25 of $5)');
    }
    expect(h.provider.requests).toHaveLength(0);
    expect(await h.traces()).toEqual([]);
    expect(h.warnings).toEqual([]);
  });

  it("refuses only the calls of the user, tag, model, environment or metadata value it counts", async () => {
    const { openai } = clients;
    const create = (body: object = {}) => openai.chat.completions.create({ model: "gpt-4o", messages, ...body });

    await answerBudget(h.service, exceeded({ kind: "ALERT_SCOPE_KIND_USER", value: "u_1" }));
    await withAttributes({ userId: "u_1" }, () => refused(() => create()));
    await refused(() => create(withCallAttributes({}, { userId: "u_1" })));
    await expect(withAttributes({ userId: "u_2" }, () => create())).resolves.toMatchObject({
      object: "chat.completion",
    });
    await expect(create()).resolves.toMatchObject({ object: "chat.completion" });

    await answerBudget(h.service, exceeded({ kind: "ALERT_SCOPE_KIND_TAG", value: "batch" }));
    await refused(() => withAttributes({ tags: ["batch"] }, () => create()));
    await expect(withAttributes({ tags: ["chat"] }, () => create())).resolves.toBeDefined();

    await answerBudget(h.service, exceeded({ kind: "ALERT_SCOPE_KIND_MODEL", value: "gpt-4o" }));
    await refused(() => create());
    await expect(create({ model: "gpt-4o-mini" })).resolves.toBeDefined();

    await answerBudget(
      h.service,
      exceeded({ kind: "ALERT_SCOPE_KIND_METADATA", value: "search", metadataKey: "feature" }),
    );
    const error = await refused(() => create(withCallAttributes({}, { metadata: { feature: "search" } })));
    expect(error.scope).toEqual({ kind: "metadata", value: "search", metadataKey: "feature" });
    expect(error.message).toContain('for metadata.feature "search"');
    await expect(create(withCallAttributes({}, { metadata: { feature: "chat" } }))).resolves.toBeDefined();

    // The allowed calls were made and traced as usual.
    expect(await h.traces()).toHaveLength(5);
  });

  it("refuses untraced calls too, and lets calls through again once the budget is no longer exceeded", async () => {
    await answerBudget(h.service, exceeded(PROJECT));
    await refused(() => clients.openai.chat.completions.create({ model: "gpt-4o", messages }));
    // untraced() stops the trace, not the budget.
    await untraced(() => refused(() => clients.openai.chat.completions.create({ model: "gpt-4o", messages })));
    await answerBudget(h.service, { status: 200, body: { projectId: "p_1", budgets: [] } });
    await expect(clients.openai.chat.completions.create({ model: "gpt-4o", messages })).resolves.toBeDefined();
  });

  it("reads the status with the ingest key, in the background only: calls add no request to the service", async () => {
    // A service of its own: a read the previous init()'s guard had in flight cannot land in its count.
    const own = await FakeCalltrace.start();
    try {
      await initEnforcing({ endpoint: own.endpoint, budgetRefreshMs: 60_000 });
      const deadline = Date.now() + 5_000;
      while (own.budgetRequests.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(own.budgetRequests.map((headers) => headers.authorization)).toEqual([`Bearer ${TEST_KEY}`]);
      for (let i = 0; i < 20; i++) await clients.openai.chat.completions.create({ model: "gpt-4o", messages });
      await flush(5_000);
      expect(own.received).toHaveLength(20);
      expect(own.budgetRequests).toHaveLength(1);
    } finally {
      // Back to the harness's service and the fast refresh for the tests after this one, pass or fail.
      await initEnforcing();
      await own.close();
    }
  });
});

describe("enforceBudget fails open", () => {
  it.each<[string, Answer, RegExp]>([
    ["a 500", { status: 500, body: { error: "internal" } }, /answered 500/],
    ["a 503", { status: 503, body: { error: "unavailable" } }, /answered 503/],
    ["a 401", { status: 401, body: { error: "unauthenticated" } }, /refused the API key for \/v1\/budget \(401\)/],
    ["a 403", { status: 403, body: { error: "forbidden" } }, /refused the API key for \/v1\/budget \(403\)/],
    [
      "a body that is not a BudgetStatus",
      { status: 200, body: { budgets: "all of them" } },
      /unreadable budget status/,
    ],
    ["a body that is not JSON", { status: 200, body: undefined }, /unreadable budget status/],
    ["a dropped connection", "reset", /could not read budgets/],
  ])("on %s: calls proceed, with one warning", async (_what, answer, warning) => {
    await answerBudget(h.service, exceeded(PROJECT));
    await answerBudget(h.service, answer);
    await answerBudget(h.service, answer); // several failed refreshes: still one warning
    for (let i = 0; i < 3; i++) {
      await expect(clients.openai.chat.completions.create({ model: "gpt-4o", messages })).resolves.toBeDefined();
    }
    expect(h.warnings).toHaveLength(1);
    expect(h.warnings[0]).toMatch(warning);
    expect(h.warnings[0]).toContain("calls are not refused until it answers");
    expect(h.warnings[0]).not.toContain(TEST_KEY);
  });

  it("on a timeout: calls proceed", async () => {
    // Far above an answer's time on a loaded machine: a read that times out fails open too, so a
    // prompt answer must never reach it.
    await initEnforcing({ requestTimeoutMs: 1_000 });
    await answerBudget(h.service, exceeded(PROJECT));
    await refused(() => clients.openai.chat.completions.create({ model: "gpt-4o", messages }));
    await answerBudget(h.service, "hang");
    await expect(clients.openai.chat.completions.create({ model: "gpt-4o", messages })).resolves.toBeDefined();
    expect(h.warnings).toEqual([expect.stringMatching(/no answer within 1000 ms/)]);
  });

  it("a refresh cut short by the next init() is not warned about", async () => {
    const warnings: string[] = [];
    await initEnforcing({ requestTimeoutMs: 5_000, onWarning: (message) => warnings.push(message) });
    h.service.budget = "hang";
    const seen = h.service.budgetRequests.length;
    const deadline = Date.now() + 10_000;
    while (h.service.budgetRequests.length === seen) {
      if (Date.now() > deadline) throw new Error("the SDK sent no budget request");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // A refresh now hangs; the next init() stops this tracer and cuts it short.
    await initEnforcing({ requestTimeoutMs: 100 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(warnings).toEqual([]);
  });

  it("when the service is unreachable: calls proceed from the start", async () => {
    const warnings: string[] = [];
    await initEnforcing({
      endpoint: "http://127.0.0.1:1/v1/traces",
      onWarning: (message) => warnings.push(message),
      maxAttempts: 1,
    });
    for (let i = 0; i < 3; i++) {
      await expect(clients.openai.chat.completions.create({ model: "gpt-4o", messages })).resolves.toBeDefined();
      await new Promise((resolve) => setTimeout(resolve, REFRESH_MS * 2));
    }
    expect(warnings.filter((w) => w.startsWith("enforceBudget"))).toEqual([
      expect.stringContaining("could not read budgets from http://127.0.0.1:1/v1/budget"),
    ]);
    await initEnforcing();
  });
});

describe("without enforceBudget (the default)", () => {
  it("never reads the budget status and never refuses", async () => {
    await answerBudget(h.service, exceeded(PROJECT));
    await init({ apiKey: TEST_KEY, endpoint: h.service.endpoint, onWarning: (m) => h.warnings.push(m) });
    const before = h.service.budgetRequests.length;
    await new Promise((resolve) => setTimeout(resolve, REFRESH_MS * 4));
    await expect(clients.openai.chat.completions.create({ model: "gpt-4o", messages })).resolves.toBeDefined();
    await expect(
      clients.anthropic.messages.create({ model: "claude-sonnet-4-5", max_tokens: 8, messages }),
    ).resolves.toBeDefined();
    expect(await h.traces()).toHaveLength(2);
    // At most the one refresh that was in flight when the previous tracer stopped.
    expect(h.service.budgetRequests.length - before).toBeLessThanOrEqual(1);
    await new Promise((resolve) => setTimeout(resolve, REFRESH_MS * 4));
    const settled = h.service.budgetRequests.length;
    await new Promise((resolve) => setTimeout(resolve, REFRESH_MS * 4));
    expect(h.service.budgetRequests.length).toBe(settled);
  });
});
