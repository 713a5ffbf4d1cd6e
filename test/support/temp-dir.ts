import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onTestFinished } from "vitest";

/** A fresh directory under the OS temp dir, removed when the calling test (or file, in a hook) ends. */
export function tempDir(prefix = "calltrace-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  try {
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  } catch {
    // Called from a hook rather than a test: the OS temp dir is cleaned by the system.
  }
  return dir;
}
