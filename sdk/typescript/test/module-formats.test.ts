import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeCalltrace } from "./support/fake-calltrace.js";
import { FakeProvider } from "./support/fake-provider.js";
import { TEST_KEY } from "./support/harness.js";
import { runApp } from "./support/run-app.js";

// These run the built package (dist/, built by the global setup) the way
// applications load it: by name, through its exports map.
const apps = fileURLToPath(new URL("apps/", import.meta.url));
let provider: FakeProvider;
let service: FakeCalltrace;

beforeAll(async () => {
  provider = await FakeProvider.start();
  service = await FakeCalltrace.start();
});
afterAll(async () => {
  await provider.close();
  await service.close();
});

describe.each([
  ["CommonJS", "commonjs-app.cjs", "cjs"],
  ["ESM", "esm-app.mjs", "esm"],
])("a %s application", (_name, script, build) => {
  it(`is traced through the ${build} build of every provider library, and its traces are sent at exit`, async () => {
    service.received.length = 0;
    const run = await runApp(join(apps, script), {
      PROVIDER_URL: provider.url,
      CALLTRACE_API_KEY: TEST_KEY,
      CALLTRACE_ENDPOINT: service.endpoint,
    });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const { instrumented } = JSON.parse(run.stdout);
    for (const name of ["openai", "@anthropic-ai/sdk", "@google/genai"]) {
      expect(instrumented).toContain(`${name} (${build})`);
    }
    expect(
      service.received.map((r) => r.body).sort((a, b) => String(a.provider).localeCompare(String(b.provider))),
    ).toEqual([
      expect.objectContaining({ provider: "anthropic", model: "claude-haiku-4-5", tokens_in: 40, status: "success" }),
      expect.objectContaining({ provider: "gemini", model: "gemini-2.0-flash", tokens_out: 15, status: "success" }),
      expect.objectContaining({ provider: "openai", model: "gpt-4o-2024-08-06", tokens_in: 19, status: "success" }),
    ]);
  });
});

describe("both builds of the SDK in one process", () => {
  it("trace each call once", async () => {
    service.received.length = 0;
    const run = await runApp(join(apps, "both-builds-app.mjs"), {
      PROVIDER_URL: provider.url,
      CALLTRACE_API_KEY: TEST_KEY,
      CALLTRACE_ENDPOINT: service.endpoint,
    });
    expect(run.stderr).toBe("");
    expect(service.received).toHaveLength(1);
    const { esm, cjs } = JSON.parse(run.stdout);
    // The first to patch a class keeps it; the other leaves it alone.
    expect([...esm, ...cjs].filter((name: string) => name.startsWith("openai"))).toHaveLength(2);
  });
});

describe("an application without provider libraries", () => {
  it("starts without patching anything and without a word", async () => {
    const dir = mkdtempSync(join(tmpdir(), "calltrace-bare-"));
    try {
      const installed = join(dir, "node_modules", "calltrace-sdk");
      const packageRoot = fileURLToPath(new URL("..", import.meta.url));
      cpSync(join(packageRoot, "dist"), join(installed, "dist"), { recursive: true });
      cpSync(join(packageRoot, "package.json"), join(installed, "package.json"));
      cpSync(join(apps, "no-providers-app.cjs"), join(dir, "app.cjs"));
      const run = await runApp(join(dir, "app.cjs"), {}, dir);
      expect(run.stderr).toBe("");
      expect(JSON.parse(run.stdout)).toEqual({ instrumented: [], warnings: [] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
