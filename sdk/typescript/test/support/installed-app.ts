import { cpSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { inject } from "vitest";
import type { PackedSdk } from "./build-package.js";

const apps = fileURLToPath(new URL("../apps/", import.meta.url));

/** The packed SDK and the application project it is installed in (see build-package.ts). */
export function packedSdk(): PackedSdk {
  return inject("packedSdk");
}

/** Copies `test/apps/<name>` into `dir` (default: the installed application) and returns its path there. */
export function placeApp(name: string, dir: string = packedSdk().app): string {
  const target = join(dir, name);
  cpSync(join(apps, name), target);
  return target;
}
