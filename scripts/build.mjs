#!/usr/bin/env node
// `npm run build` (and `npm pack`, through prepack): the service as it ships, src/ and gen/
// compiled to JavaScript in dist/ (tsconfig.build.json), so the package needs neither tsx nor any
// TypeScript at start-up. The dashboard's web/dist is built by `prepare`, which npm runs on
// `npm install` and again on `npm pack` (after prepack).
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));

function run(command, args) {
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit" });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} exited ${result.status ?? result.signal}`);
}

rmSync(`${root}/dist`, { recursive: true, force: true });
run("npx", ["tsc", "-p", "tsconfig.build.json"]);
