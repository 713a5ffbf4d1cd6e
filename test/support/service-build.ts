import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

/**
 * vitest's global setup: src/ and gen/ compiled to JavaScript once per run, laid out as the package
 * ships them (dist/src, dist/gen, with web/ and node_modules beside dist/), for the `calltrace`
 * child processes the tests start (test/support/cli.ts). Through bin/calltrace.js from the source
 * checkout each child would compile the sources again with tsx, about a second of CPU per start,
 * and the suite starts a few hundred. The TypeScript SDK's end-to-end tests run it too (a global
 * setup of sdk/typescript's suite). One test still runs bin/calltrace.js from the source
 * (test/cli/cli.test.ts); the package test runs the tsc-compiled package.
 */
const root = fileURLToPath(new URL("../..", import.meta.url));

export default async function compileService(): Promise<() => void> {
  const dir = mkdtempSync(join(tmpdir(), "calltrace-build-"));
  // One file per source file, no bundling: import.meta.url-relative paths stay as they ship.
  // Type-only imports are marked (verbatimModuleSyntax), so a per-file transform is exact. The
  // service prices with the TypeScript SDK's price table, so its sources are compiled too, as tsc does.
  await build({
    entryPoints: ["src/**/*.ts", "gen/**/*.ts", "sdk/typescript/src/**/*.ts"],
    absWorkingDir: root,
    outbase: root,
    outdir: join(dir, "dist"),
    format: "esm",
    platform: "node",
    target: "node20.19",
    logLevel: "warning",
  });
  // The JSON the sources import, beside them as tsc emits it.
  mkdirSync(join(dir, "dist/sdk/pricing"));
  copyFileSync(join(root, "sdk/pricing/models.json"), join(dir, "dist/sdk/pricing/models.json"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module", private: true }));
  mkdirSync(join(dir, "web"));
  symlinkSync(join(root, "web/dist"), join(dir, "web/dist"));
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
  process.env.CALLTRACE_TEST_BUILD = join(dir, "dist/src/cli/main.js");
  return () => rmSync(dir, { recursive: true, force: true });
}
