import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { flush, init, shutdown, stats } from "../src/index.js";
import { FakeCalltrace, type Answer } from "./support/fake-calltrace.js";
import { FakeProvider } from "./support/fake-provider.js";
import { TEST_KEY } from "./support/harness.js";

// The application must never wait for, or see an error from, the service.
let provider: FakeProvider;
let service: FakeCalltrace;
let client: OpenAI;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
const messages = [{ role: "user" as const, content: "hi" }];

beforeAll(async () => {
  provider = await FakeProvider.start();
  service = await FakeCalltrace.start();
  client = new OpenAI({ apiKey: "sk-fake", baseURL: `${provider.url}/v1`, maxRetries: 0 });
  process.on("unhandledRejection", onUnhandled);
});
afterAll(async () => {
  process.off("unhandledRejection", onUnhandled);
  await provider.close();
  await service.close();
});
afterEach(async () => {
  await shutdown(500);
  service.answers.length = 0;
  service.received.length = 0;
  expect(unhandled).toEqual([]);
});

async function tenCalls(): Promise<void> {
  for (let i = 0; i < 10; i++) {
    const completion = await client.chat.completions.create({ model: "gpt-4o", messages });
    expect(completion.choices[0]?.message.content).toBe("Hello there!");
  }
}

describe("the application's calls", () => {
  it("succeed without waiting while the service never answers", async () => {
    await init({ apiKey: TEST_KEY, endpoint: service.endpoint, concurrency: 1, onWarning: () => {} });
    service.answers.push(...Array<Answer>(20).fill("hang"));
    await tenCalls();
    // One send hangs; the nine other traces wait behind it, the app did not.
    expect(stats()).toMatchObject({ sent: 0, pending: 10 });
  });

  it("succeed while the service is unreachable, and sending gives up quietly", async () => {
    const down = await FakeCalltrace.start();
    const endpoint = down.endpoint;
    await down.close(); // nothing listens on that port now
    const warnings: string[] = [];
    await init({ apiKey: TEST_KEY, endpoint, maxAttempts: 2, retryBaseDelayMs: 5, onWarning: (m) => warnings.push(m) });
    await tenCalls();
    expect(await flush(5_000)).toBe(true);
    expect(stats()).toMatchObject({ sent: 0, failed: 10, pending: 0 });
    expect(warnings).toEqual([expect.stringContaining("could not reach")]);
  });

  it.each([
    { status: 429, body: { error: "Rate limit exceeded", retry_after: 30 }, headers: { "retry-after": "30" } },
    { status: 503, body: { error: "Service unavailable", retry_after: 30 }, headers: { "retry-after": "30" } },
  ])("succeed while the service answers $status", async (answer) => {
    await init({ apiKey: TEST_KEY, endpoint: service.endpoint, onWarning: () => {} });
    service.answers.push(...Array<Answer>(20).fill(answer));
    await tenCalls();
    await service.waitFor(1); // the first send met the answer; the rest wait for retry_after
    expect(stats().sent).toBe(0);
  });
});
