import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeCalltrace } from "./support/fake-calltrace.js";
import { FakeProvider } from "./support/fake-provider.js";
import { TEST_KEY } from "./support/harness.js";
import { packedSdk, placeApp } from "./support/installed-app.js";
import { runApp } from "./support/run-app.js";

// These run the packed SDK (npm pack), installed into a fresh project with the
// newest provider libraries, the way applications load it: by name.
let provider: FakeProvider;
let service: FakeCalltrace;
let env: Record<string, string>;

beforeAll(async () => {
  provider = await FakeProvider.start();
  service = await FakeCalltrace.start();
  env = { PROVIDER_URL: provider.url, CALLTRACE_API_KEY: TEST_KEY, CALLTRACE_ENDPOINT: service.endpoint };
});
afterAll(async () => {
  await provider.close();
  await service.close();
});

const byProvider = () =>
  service.received.map((r) => r.body).sort((a, b) => String(a.provider).localeCompare(String(b.provider)));

describe.each([
  ["CommonJS", "commonjs-app.cjs", "cjs"],
  ["ESM", "esm-app.mjs", "esm"],
])("a %s application", (_name, script, build) => {
  it(`is traced through the ${build} build of every provider library, and its traces are sent at exit`, async () => {
    service.received.length = 0;
    const run = await runApp(placeApp(script), env, packedSdk().app);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const { instrumented } = JSON.parse(run.stdout);
    for (const name of ["openai", "@anthropic-ai/sdk", "@google/genai"]) {
      expect(instrumented).toContain(`${name} (${build})`);
    }
    expect(byProvider()).toEqual([
      expect.objectContaining({ provider: "anthropic", model: "claude-haiku-4-5", tokens_in: 40, status: "success" }),
      expect.objectContaining({ provider: "gemini", model: "gemini-2.0-flash", tokens_out: 15, status: "success" }),
      expect.objectContaining({ provider: "openai", model: "gpt-4o-2024-08-06", tokens_in: 19, status: "success" }),
    ]);
  });
});

describe("both builds of the SDK in one process", () => {
  it("trace each call once", async () => {
    service.received.length = 0;
    const run = await runApp(placeApp("both-builds-app.mjs"), env, packedSdk().app);
    expect(run.stderr).toBe("");
    expect(service.received).toHaveLength(1);
    const { esm, cjs } = JSON.parse(run.stdout);
    // The first to patch a class keeps it; the other leaves it alone.
    expect([...esm, ...cjs].filter((name: string) => name.startsWith("openai"))).toHaveLength(2);
  });
});

describe("a stream the application never reads", () => {
  it("is traced as the process exits, with its usage marked missing", async () => {
    service.received.length = 0;
    const run = await runApp(placeApp("unread-stream-app.mjs"), env, packedSdk().app);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(service.received.map((r) => r.body)).toMatchObject([
      { provider: "openai", status: "success", tokens_in: 0, metadata: { "calltrace.usage": "missing" } },
      { provider: "anthropic", status: "success", tokens_in: 0, metadata: { "calltrace.usage": "missing" } },
    ]);
  });
});

/** A copy of folder `from` at `to` made of hard links: a package copy in its own place, made in no time. */
function linkCopy(from: string, to: string) {
  mkdirSync(join(to, ".."), { recursive: true });
  execFileSync("cp", ["-al", from, to]);
}

/** A fresh folder, removed after `use`. */
async function inTempDir(use: (dir: string) => Promise<void> | void) {
  const dir = mkdtempSync(join(tmpdir(), "calltrace-sdk-app-"));
  try {
    await use(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("the package's types", () => {
  it("type-check for an ESM and a CommonJS consumer", () => {
    const dir = join(packedSdk().app, "types-check");
    mkdirSync(dir, { recursive: true });
    placeApp("types-esm.mts", dir);
    placeApp("types-cjs.cts", dir);
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
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({ compilerOptions, files: ["types-esm.mts", "types-cjs.cts"] }),
    );
    const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
    execFileSync(process.execPath, [tsc, "-p", dir], { stdio: "pipe" });
  });
});

describe("an application without provider libraries", () => {
  it("starts without patching anything and without a word", async () => {
    await inTempDir(async (dir) => {
      cpSync(join(packedSdk().app, "node_modules", "calltrace-sdk"), join(dir, "node_modules", "calltrace-sdk"), {
        recursive: true,
      });
      const run = await runApp(placeApp("no-providers-app.cjs", dir), {}, dir);
      expect(run.stderr).toBe("");
      expect(JSON.parse(run.stdout)).toEqual({ instrumented: [], warnings: [] });
    });
  });
});

describe("the provider libraries patched are the application's", () => {
  it("when the SDK is linked (npm link, file:) from a folder with its own copy of openai", async () => {
    await inTempDir(async (dir) => {
      const { app, tarball } = packedSdk();
      // The SDK's folder, as a development checkout: the package and its own node_modules/openai.
      const linked = join(dir, "sdk");
      mkdirSync(linked);
      execFileSync("tar", ["xzf", tarball, "-C", linked, "--strip-components=1"]);
      linkCopy(join(app, "node_modules", "openai"), join(linked, "node_modules", "openai"));
      // The application: the SDK linked in, and its own openai.
      const project = join(dir, "project");
      mkdirSync(join(project, "node_modules"), { recursive: true });
      symlinkSync(linked, join(project, "node_modules", "calltrace-sdk"), "dir");
      linkCopy(join(app, "node_modules", "openai"), join(project, "node_modules", "openai"));
      service.received.length = 0;
      const run = await runApp(placeApp("linked-sdk-app.cjs", project), env, project);
      expect(run.stderr).toBe("");
      expect(JSON.parse(run.stdout).instrumented).toContain("openai (cjs)");
      expect(service.received.map((r) => r.body)).toMatchObject([{ provider: "openai", tokens_in: 19 }]);
    });
  });

  it("and a copy the application loads from elsewhere (a dependency's own) is warned about once", async () => {
    await inTempDir(async (dir) => {
      const { app } = packedSdk();
      for (const name of ["calltrace-sdk", "openai"]) {
        linkCopy(join(app, "node_modules", name), join(dir, "node_modules", name));
      }
      const dependency = join(dir, "node_modules", "legacy-client");
      linkCopy(join(app, "node_modules", "openai"), join(dependency, "node_modules", "openai"));
      writeFileSync(join(dependency, "package.json"), '{ "name": "legacy-client", "main": "index.js" }');
      writeFileSync(join(dependency, "index.js"), 'module.exports = require("openai");\n');
      const run = await runApp(placeApp("nested-copy-app.cjs", dir), env, dir);
      expect(run.stderr).toBe("");
      const { warnings } = JSON.parse(run.stdout);
      expect(warnings).toEqual([
        expect.stringContaining(
          `loaded openai from ${join(dependency, "node_modules", "openai")}, which is not traced`,
        ),
      ]);
    });
  });
});
