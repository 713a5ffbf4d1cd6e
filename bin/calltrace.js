#!/usr/bin/env node
// The calltrace command. From a source checkout (src/ is here) it runs the TypeScript sources
// through tsx, so there is no build step between `npm install` and `npm start`; the installed
// package (npm pack) ships no src/, only the JavaScript compiled into dist/ by `npm run build`.
import { existsSync } from "node:fs";

const source = new URL("../src/cli/main.ts", import.meta.url);
if (existsSync(source)) {
  const tsx = await import("tsx/esm/api").catch(() => {
    console.error("calltrace: a source checkout runs through tsx, a dev dependency: run `npm install` (not --omit=dev), or install the package that `npm pack` makes");
    process.exit(1);
  });
  tsx.register();
  await import(source.href);
} else {
  await import(new URL("../dist/src/cli/main.js", import.meta.url).href);
}
