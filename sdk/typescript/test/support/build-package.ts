import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";

/** What the global setup hands the tests: the packed SDK, and an application that installed it. */
export interface PackedSdk {
  /** The tarball `npm pack` made. */
  tarball: string;
  /** A fresh project with the tarball and the latest openai, @anthropic-ai/sdk and @google/genai installed. */
  app: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    packedSdk: PackedSdk;
  }
}

const PROVIDERS = ["openai", "@anthropic-ai/sdk", "@google/genai"];

/**
 * Vitest global setup: packs the SDK as it is published (`npm pack`, whose
 * prepack builds dist/) and installs the tarball, with the newest provider
 * libraries from the registry, into a fresh project, as a user would. Tests
 * that run applications run them there, never from the source tree.
 */
export default function packAndInstall(project: TestProject): () => void {
  const packageRoot = fileURLToPath(new URL("../..", import.meta.url));
  const work = mkdtempSync(join(tmpdir(), "calltrace-sdk-packed-"));
  const npm = (args: string[], cwd: string) =>
    execFileSync("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], { cwd, stdio: "pipe" });
  npm(["pack", "--pack-destination", work], packageRoot);
  const tarball = join(work, readdirSync(work).find((name) => name.endsWith(".tgz"))!);
  const app = join(work, "app");
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "calltrace-sdk-test-app", private: true }));
  npm(["install", tarball, ...PROVIDERS.map((name) => `${name}@latest`)], app);
  const versions = PROVIDERS.map((name) => {
    const manifest = JSON.parse(readFileSync(join(app, "node_modules", name, "package.json"), "utf8"));
    return `${name}@${manifest.version}`;
  });
  console.log(`packed ${tarball}; installed with ${versions.join(", ")}`);
  project.provide("packedSdk", { tarball, app });
  return () => rmSync(work, { recursive: true, force: true });
}
