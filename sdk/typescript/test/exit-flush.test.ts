import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeCalltrace, type Answer } from "./support/fake-calltrace.js";
import { FakeProvider } from "./support/fake-provider.js";
import { TEST_KEY } from "./support/harness.js";
import { packedSdk, placeApp } from "./support/installed-app.js";
import { runApp } from "./support/run-app.js";

// The ESM application, run where the packed SDK is installed.
const app = () => placeApp("esm-app.mjs");
let provider: FakeProvider;
let service: FakeCalltrace;

beforeEach(async () => {
  provider = await FakeProvider.start();
  service = await FakeCalltrace.start();
});
afterEach(async () => {
  await provider.close();
  await service.close();
});

/** Runs the app; returns how long it lived after its own work was done, to its exit event. */
async function lingerAfterWork(env: Record<string, string> = {}) {
  const run = await runApp(
    app(),
    {
      PROVIDER_URL: provider.url,
      CALLTRACE_API_KEY: TEST_KEY,
      CALLTRACE_ENDPOINT: service.endpoint,
      REPORT_EXIT_AT: "1",
      ...env,
    },
    packedSdk().app,
  );
  expect(run.code).toBe(0);
  const [{ doneAt }, { exitAt }] = run.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
  expect(run.exitedAt).toBeGreaterThanOrEqual(exitAt);
  return exitAt - doneAt;
}

describe("at process exit", () => {
  it("adds no wait when every trace is already delivered", async () => {
    expect(await lingerAfterWork()).toBeLessThan(2_500);
    expect(service.received).toHaveLength(3);
  });

  it("waits for a slow service to take the pending traces", async () => {
    service.answers.push(...Array<Answer>(3).fill({ status: 202, body: { status: "ok" }, delayMs: 700 }));
    const linger = await lingerAfterWork();
    expect(linger).toBeGreaterThanOrEqual(300);
    expect(linger).toBeLessThan(3_000);
    expect(service.received).toHaveLength(3);
  });

  it("gives a service that never answers exitFlushTimeoutMs, then exits", async () => {
    service.answers.push(...Array<Answer>(10).fill("hang"));
    const linger = await lingerAfterWork({ EXIT_FLUSH_MS: "1000" });
    expect(linger).toBeGreaterThanOrEqual(900);
    expect(linger).toBeLessThan(4_000);
  });

  it("waits at most 10 seconds by default", { timeout: 30_000 }, async () => {
    service.answers.push(...Array<Answer>(10).fill("hang"));
    const linger = await lingerAfterWork();
    expect(linger).toBeGreaterThanOrEqual(9_900);
    expect(linger).toBeLessThan(13_000);
  });
});
