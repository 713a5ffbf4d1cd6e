import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/**
 * Vitest global setup: builds dist/ once per run, for the tests that run the
 * published package (both its builds) in child processes.
 */
export default function buildPackage(): void {
  const packageRoot = fileURLToPath(new URL("../..", import.meta.url));
  execFileSync(process.execPath, ["scripts/build.mjs"], { cwd: packageRoot, stdio: "inherit" });
}
