import type OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { flush, init, shutdown, stats, untraced, withAttributes, withCallAttributes } from "../src/index.js";
import type { FakeCalltrace } from "./support/fake-calltrace.js";
import type { FakeProvider } from "./support/fake-provider.js";
import { startFakes, TEST_KEY } from "./support/harness.js";

// Sampling, switching tracing off, and untraced blocks.
let provider: FakeProvider;
let service: FakeCalltrace;
let client: OpenAI;
const messages = [{ role: "user" as const, content: "hi" }];
const chat = () => client.chat.completions.create({ model: "gpt-4o", messages });

let fakes: Awaited<ReturnType<typeof startFakes>>;

beforeAll(async () => {
  fakes = await startFakes();
  ({ provider, service, client } = fakes);
});
afterAll(() => fakes.close());
afterEach(async () => {
  vi.unstubAllEnvs();
  provider.scenario = { kind: "ok" };
  await shutdown(1_000);
  service.received.length = 0;
});

async function traces() {
  await flush(5_000);
  return service.received.splice(0).map((r) => r.body);
}

describe("sampleRate", () => {
  it("traces about that share of successful calls, each marked with the rate", async () => {
    await init({ apiKey: TEST_KEY, endpoint: service.endpoint, sampleRate: 0.25 });
    await Promise.all(Array.from({ length: 200 }, chat));
    const sampled = await traces();
    // Binomial(200, 0.25): mean 50, sd 6.1; this range fails once in ~10^6 runs.
    expect(sampled.length).toBeGreaterThan(20);
    expect(sampled.length).toBeLessThan(80);
    for (const trace of sampled) expect(trace.metadata).toEqual({ "calltrace.sample_rate": "0.25" });
  });

  it("keeps every error", async () => {
    await init({ apiKey: TEST_KEY, endpoint: service.endpoint, sampleRate: 0 });
    await chat();
    provider.scenario = { kind: "status", status: 500 };
    for (let i = 0; i < 5; i++) await chat().catch(() => {});
    const kept = await traces();
    expect(kept).toHaveLength(5);
    expect(kept.every((t) => t.status === "error")).toBe(true);
  });

  it.each([-0.1, 1.5, Number.NaN])("refuses %s", (sampleRate) => {
    expect(() => init({ apiKey: TEST_KEY, sampleRate })).toThrow(/sampleRate must be a number from 0 to 1/);
  });
});

describe("switching off", () => {
  it.each(["1", "true"])("CALLTRACE_DISABLED=%s patches nothing, sends nothing, says nothing", async (value) => {
    vi.stubEnv("CALLTRACE_DISABLED", value);
    const warnings: string[] = [];
    await init({ apiKey: TEST_KEY, endpoint: service.endpoint, onWarning: (m) => warnings.push(m) });
    await chat();
    expect(await traces()).toEqual([]);
    expect(stats().instrumented).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it("wins over enabled: true in code", async () => {
    vi.stubEnv("CALLTRACE_DISABLED", "1");
    await init({ apiKey: TEST_KEY, endpoint: service.endpoint, enabled: true });
    expect(stats().instrumented).toEqual([]);
  });

  it("enabled: false does the same, even without a key", async () => {
    const warnings: string[] = [];
    await init({ enabled: false, onWarning: (m) => warnings.push(m) });
    await chat();
    expect(stats().instrumented).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it("leaves withAttributes() and withCallAttributes() working as plain calls", async () => {
    await init({ enabled: false });
    const completion = await withAttributes({ userId: "u" }, () =>
      client.chat.completions.create(withCallAttributes({ model: "gpt-4o", messages }, { sessionId: "s" })),
    );
    expect(completion.choices[0]?.message.content).toBe("Hello there!");
    expect(provider.requests.at(-1)?.body).toEqual({ model: "gpt-4o", messages });
  });
});

describe("untraced()", () => {
  it("runs a block with none of its calls traced, across await, and returns its result", async () => {
    await init({ apiKey: TEST_KEY, endpoint: service.endpoint });
    const result = await untraced(async () => {
      await chat();
      await new Promise((resolve) => setTimeout(resolve, 1));
      await Promise.all([chat(), withAttributes({ userId: "still-untraced" }, chat)]);
      return "done";
    });
    expect(result).toBe("done");
    await chat();
    expect(await traces()).toHaveLength(1);
  });

  it("still keeps the calltrace key away from the provider", async () => {
    await init({ apiKey: TEST_KEY, endpoint: service.endpoint });
    await untraced(() =>
      client.chat.completions.create({ model: "gpt-4o", messages, calltrace: { userId: "u" } } as any),
    );
    expect(provider.requests.at(-1)?.body).not.toHaveProperty("calltrace");
    expect(await traces()).toEqual([]);
  });
});
