// Builds the dual package: dist/esm (ESM) and dist/cjs (CommonJS), each a
// single bundle with the shared price table (sdk/pricing/models.json) inlined,
// next to the same .d.ts tree. dist/cjs/package.json marks that folder as
// CommonJS so Node and TypeScript read its .js and .d.ts files as such.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = new URL("..", import.meta.url);
process.chdir(fileURLToPath(root));
rmSync("dist", { recursive: true, force: true });

const common = {
  entryPoints: ["src/index.ts"],
  bundle: true,
  platform: "node",
  target: "node18",
  packages: "external", // provider packages are found at run time, never bundled
  logLevel: "warning",
};
await build({ ...common, format: "esm", outfile: "dist/esm/index.js" });
await build({
  ...common,
  format: "cjs",
  outfile: "dist/cjs/index.js",
  // createRequire(import.meta.url) needs a URL in CommonJS too.
  define: { "import.meta.url": "import_meta_url" },
  inject: ["scripts/cjs-import-meta-url.js"],
});

const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { stdio: "inherit" });
mkdirSync("dist/cjs", { recursive: true });
cpSync("dist/esm", "dist/cjs", { recursive: true, filter: (path) => !path.endsWith("index.js") });
writeFileSync("dist/cjs/package.json", '{ "type": "commonjs" }\n');
