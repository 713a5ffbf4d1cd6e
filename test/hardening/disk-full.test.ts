import { execFileSync } from "node:child_process";
import { closeSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, startServiceProcess } from "../support/cli.js";
import { tempDir } from "../support/temp-dir.js";
import { postTrace, traceBody } from "../support/test-service.js";
import { waitFor } from "../support/webhook-receiver.js";

/** Fills the file system under `dir` with a file until it has no room left. */
function fill(file: string): void {
  const fd = openSync(file, "w");
  const chunk = Buffer.alloc(64 * 1024);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
  } finally {
    closeSync(fd);
  }
}

describe("a full disk", () => {
  it("makes /readyz answer 503 and is logged (not once per write); both clear when writes succeed again", async () => {
    // A small file system of its own (tmpfs; the tests run as root, as CI does).
    const mountPoint = tempDir();
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=16m", "tmpfs", mountPoint]);
    const server = await startServiceProcess(["--data-dir", mountPoint]).catch((error: unknown) => {
      execFileSync("umount", [mountPoint]);
      throw error;
    });
    try {
      const key = (JSON.parse(runCli(["keys", "create", "--plan", "pro", "--json", "--data-dir", mountPoint])) as { key: string }).key;
      expect((await postTrace(server.url, traceBody(key), { key })).status).toBe(202);
      const filler = join(mountPoint, "filler");
      fill(filler);

      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) statuses.push((await postTrace(server.url, traceBody(key, { model: "m".repeat(200) }), { key })).status);
      expect(statuses).toContain(503);
      expect(statuses.every((s) => s === 503 || s === 202)).toBe(true);
      const notReady = await fetch(`${server.url}/readyz`);
      expect(notReady.status).toBe(503);
      expect(((await notReady.json()) as { reason: string }).reason).toMatch(/store writes are failing: .*full/i);
      // The log comes through the child's stdout pipe, which may deliver it after the answers.
      const failedLines = () => server.lines.filter((l) => l.includes('"msg":"store write failed"'));
      await waitFor(() => failedLines().length > 0, "the failed write's log line");
      const logged = failedLines();
      expect(logged.length).toBeGreaterThanOrEqual(1);
      expect(logged.length).toBeLessThan(statuses.filter((s) => s === 503).length);

      rmSync(filler);
      expect((await postTrace(server.url, traceBody(key), { key })).status).toBe(202);
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      await waitFor(() => server.lines.some((l) => l.includes('"msg":"store writes succeed again"')), "the log line of writes succeeding again");
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
      execFileSync("umount", [mountPoint]);
    }
  });
});
