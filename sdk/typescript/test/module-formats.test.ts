import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
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

/** A folder with the built package installed in node_modules, as npm would; removed after `use`. */
function withInstalledPackage(use: (dir: string) => Promise<void> | void) {
  const dir = mkdtempSync(join(tmpdir(), "calltrace-installed-"));
  const packageRoot = fileURLToPath(new URL("..", import.meta.url));
  const installed = join(dir, "node_modules", "calltrace-sdk");
  cpSync(join(packageRoot, "dist"), join(installed, "dist"), { recursive: true });
  cpSync(join(packageRoot, "package.json"), join(installed, "package.json"));
  return Promise.resolve(use(dir)).finally(() => rmSync(dir, { recursive: true, force: true }));
}

describe("the package's types", () => {
  it("type-check for an ESM and a CommonJS consumer", async () => {
    await withInstalledPackage((dir) => {
      cpSync(join(apps, "types-esm.mts"), join(dir, "esm.mts"));
      cpSync(join(apps, "types-cjs.cts"), join(dir, "cjs.cts"));
      // skipLibCheck and no @types/node keep this fast: what is checked is that
      // both module systems resolve the package to its types and can use them.
      const compilerOptions = {
        module: "node16",
        strict: true,
        noEmit: true,
        target: "es2022",
        types: [],
        skipLibCheck: true,
      };
      writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["esm.mts", "cjs.cts"] }));
      const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
      execFileSync(process.execPath, [tsc, "-p", dir], { stdio: "pipe" });
    });
  });
});

describe("an application without provider libraries", () => {
  it("starts without patching anything and without a word", async () => {
    await withInstalledPackage(async (dir) => {
      cpSync(join(apps, "no-providers-app.cjs"), join(dir, "app.cjs"));
      const run = await runApp(join(dir, "app.cjs"), {}, dir);
      expect(run.stderr).toBe("");
      expect(JSON.parse(run.stdout)).toEqual({ instrumented: [], warnings: [] });
    });
  });
});
