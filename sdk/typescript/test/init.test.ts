import type OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { flush, init, shutdown, stats } from "../src/index.js";
import { importPackage, requirePackage } from "../src/load-package.js";
import { FakeCalltrace } from "./support/fake-calltrace.js";
import { startFakes, TEST_KEY } from "./support/harness.js";

let service: FakeCalltrace;
let client: OpenAI;
const messages = [{ role: "user" as const, content: "hi" }];

let fakes: Awaited<ReturnType<typeof startFakes>>;

beforeAll(async () => {
  fakes = await startFakes();
  ({ service, client } = fakes);
});
afterAll(() => fakes.close());
afterEach(async () => {
  vi.unstubAllEnvs();
  await shutdown(1_000);
  service.received.length = 0;
});

async function tracesOf(call: () => Promise<unknown>) {
  await call();
  await flush(5_000);
  return service.received.splice(0).map((r) => r.body);
}

describe("init", () => {
  it("reads the key and endpoint from CALLTRACE_API_KEY and CALLTRACE_ENDPOINT", async () => {
    vi.stubEnv("CALLTRACE_API_KEY", TEST_KEY);
    vi.stubEnv("CALLTRACE_ENDPOINT", service.endpoint);
    await init();
    const [trace] = await tracesOf(() => client.chat.completions.create({ model: "gpt-4o", messages }));
    expect(trace).toMatchObject({ api_key: TEST_KEY, provider: "openai" });
    expect(service.received).toEqual([]);
  });

  it("without a key, warns, patches nothing and leaves calls alone", async () => {
    vi.stubEnv("CALLTRACE_API_KEY", "");
    const warnings: string[] = [];
    await init({ endpoint: service.endpoint, onWarning: (m) => warnings.push(m) });
    expect(warnings).toEqual([expect.stringContaining("no API key")]);
    expect(stats().instrumented).toEqual([]);
    expect(await tracesOf(() => client.chat.completions.create({ model: "gpt-4o", messages }))).toEqual([]);
  });

  it("never puts the key in a warning", async () => {
    const warnings: string[] = [];
    const key = "not_a_ct_key_secret_value";
    await init({ apiKey: key, endpoint: service.endpoint, onWarning: (m) => warnings.push(m) });
    service.answers.push({ status: 401, body: { error: "Unauthorized", message: "Invalid API key" } });
    await tracesOf(() => client.chat.completions.create({ model: "gpt-4o", messages }));
    expect(warnings.length).toBeGreaterThanOrEqual(2);
    expect(warnings.join("\n")).not.toContain(key);
  });

  it.each([
    [{ endpoint: "not a url" }, /not a URL/],
    [{ endpoint: "ftp://example.com/v1/traces" }, /http or https/],
    [{ maxQueueSize: 0 }, /maxQueueSize/],
    [{ concurrency: 1.5 }, /concurrency/],
  ])("refuses a configuration that cannot work: %j", (options, message) => {
    expect(() => init({ apiKey: TEST_KEY, ...options })).toThrow(message);
  });

  it("warns about an endpoint that is not the trace endpoint", async () => {
    const warnings: string[] = [];
    await init({ apiKey: TEST_KEY, endpoint: "http://127.0.0.1:1/", onWarning: (m) => warnings.push(m) });
    expect(warnings).toEqual([expect.stringContaining("not .../v1/traces")]);
  });

  it("prices unknown models at 0 and warns once per model", async () => {
    const warnings: string[] = [];
    await init({ apiKey: TEST_KEY, endpoint: service.endpoint, onWarning: (m) => warnings.push(m) });
    const traces = await tracesOf(async () => {
      for (let i = 0; i < 3; i++) await client.chat.completions.create({ model: "my-local-llama", messages });
    });
    expect(traces.map((t) => t.cost_usd)).toEqual([0, 0, 0]);
    expect(warnings).toEqual([expect.stringContaining("openai/my-local-llama")]);
  });

  it("takes price overrides", async () => {
    await init({
      apiKey: TEST_KEY,
      endpoint: service.endpoint,
      prices: { openai: { "my-local-llama": { input: 1_000_000, output: 0 } } },
    });
    const [trace] = await tracesOf(() => client.chat.completions.create({ model: "my-local-llama", messages }));
    expect(trace!.cost_usd).toBe(19);
  });
});

describe("a second init", () => {
  it("replaces the first: one trace per call, to the new endpoint, with fresh state", async () => {
    const other = await FakeCalltrace.start();
    const warnings: string[] = [];
    const options = { apiKey: TEST_KEY, onWarning: (m: string) => warnings.push(m) };
    await init({ ...options, endpoint: service.endpoint, prices: { openai: { "my-model": { input: 1, output: 1 } } } });
    await init({ ...options, endpoint: other.endpoint, apiKey: "ct_second" });
    await client.chat.completions.create({ model: "my-model", messages });
    await flush(5_000);
    expect(service.received).toEqual([]);
    expect(other.received.map((r) => r.body)).toMatchObject([{ api_key: "ct_second", cost_usd: 0 }]);
    expect(warnings).toEqual([expect.stringContaining("openai/my-model")]);
    expect(stats().instrumented.filter((name) => name.startsWith("openai"))).toHaveLength(2);
    await shutdown(1_000);
    await other.close();
  });

  it("that throws on a bad configuration leaves the first in place", async () => {
    await init({ apiKey: TEST_KEY, endpoint: service.endpoint });
    expect(() => init({ apiKey: TEST_KEY, endpoint: "nowhere" })).toThrow(TypeError);
    const traces = await tracesOf(() => client.chat.completions.create({ model: "gpt-4o", messages }));
    expect(traces).toMatchObject([{ provider: "openai", api_key: TEST_KEY }]);
  });

  it("after shutdown, nothing is traced", async () => {
    await init({ apiKey: TEST_KEY, endpoint: service.endpoint });
    await shutdown();
    expect(await tracesOf(() => client.chat.completions.create({ model: "gpt-4o", messages }))).toEqual([]);
    expect(stats().instrumented).toEqual([]);
  });
});

describe("provider packages", () => {
  it("that are not installed are skipped silently", async () => {
    expect(requirePackage("calltrace-no-such-package")).toBeUndefined();
    expect(await importPackage("calltrace-no-such-package")).toBeUndefined();
  });
});
