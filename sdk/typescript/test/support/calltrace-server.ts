import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const repoRoot = fileURLToPath(new URL("../../../../", import.meta.url));
// The build the service's tests compile once per run (../../test/support/service-build.ts, a
// global setup of this suite too): through bin/calltrace.js each `calltrace` start would compile
// the sources again with tsx, about a second of CPU more, and these tests start a few dozen.
const cli = process.env.CALLTRACE_TEST_BUILD ?? join(repoRoot, "bin", "calltrace.js");

/**
 * The real calltrace server from this repository, run through its CLI
 * (`serve`, `keys create`, `traces export`) on a fresh data directory.
 */
export class CalltraceServer {
  readonly dataDir = mkdtempSync(join(tmpdir(), "calltrace-e2e-"));
  #process: ChildProcess | undefined;
  port = 0;

  /** Fails, never skips, when the server is not there to test against. */
  static assertAvailable(): void {
    if (!existsSync(cli)) {
      throw new Error(
        `the calltrace server is missing: ${cli} does not exist (the e2e test needs the server from the repo root)`,
      );
    }
    if (!existsSync(join(repoRoot, "node_modules"))) {
      throw new Error(`the calltrace server's dependencies are missing: run \`npm ci\` in ${repoRoot} first`);
    }
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}/v1/traces`;
  }

  /** `calltrace <args> --data-dir <dir>`, resolving with its stdout. */
  run(...args: string[]): Promise<string> {
    return new Promise((resolve, reject) =>
      execFile(
        process.execPath,
        [cli, ...args, "--data-dir", this.dataDir],
        { cwd: repoRoot, timeout: 60_000 },
        (error, stdout, stderr) =>
          error
            ? reject(new Error(`calltrace ${args.join(" ")} failed: ${error.message}\n${stderr}`))
            : resolve(stdout),
      ),
    );
  }

  /** Starts `calltrace serve --port 0` and waits for its "listening" log line. */
  async start(): Promise<void> {
    const child = spawn(process.execPath, [cli, "serve", "--port", "0", "--data-dir", this.dataDir], {
      cwd: repoRoot,
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.#process = child;
    let stderr = "";
    child.stderr!.on("data", (chunk) => (stderr += chunk));
    this.port = await new Promise<number>((resolve, reject) => {
      child.once("exit", (code) => reject(new Error(`calltrace serve exited (${code}) before listening:\n${stderr}`)));
      createInterface({ input: child.stdout! }).on("line", (line) => {
        try {
          const log = JSON.parse(line);
          if (log.msg === "listening" && typeof log.port === "number") resolve(log.port);
        } catch {
          // not a JSON log line
        }
      });
    });
  }

  /** Stops the server (SIGTERM) and waits for it to exit. */
  async stop(): Promise<void> {
    const child = this.#process;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }

  remove(): void {
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}
