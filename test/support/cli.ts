import { spawn, spawnSync, type ChildProcessByStdio } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Readable } from "node:stream";
import { atFileEnd } from "./file-end.js";

export const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
/** The command as a source checkout runs it: bin/calltrace.js, which compiles src/ through tsx at each start. */
export const sourceBin = fileURLToPath(new URL("../../bin/calltrace.js", import.meta.url));
/** The command the tests run: the build vitest's global setup compiled once (test/support/service-build.ts). */
export const calltraceBin = process.env.CALLTRACE_TEST_BUILD ?? sourceBin;

/** Runs `calltrace <args>` to completion; throws with its stderr when it exits non-zero. */
/** Tests' webhook receivers listen on loopback, which destinations may not point at by default (D62). */
const loopbackReceivers = { ALERT_PRIVATE_URLS: "true" };

export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, bin = calltraceBin): string {
  const result = spawnSync(process.execPath, [bin, ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...loopbackReceivers, ...env },
    encoding: "utf8",
  });
  if (result.status !== 0) {
    throw new Error(`calltrace ${args.join(" ")} exited ${result.status}: ${result.stderr}`);
  }
  return result.stdout;
}

/** Runs `calltrace <args>` and returns its exit status and output, whatever the status. */
export function runCliRaw(args: string[], env: NodeJS.ProcessEnv = {}) {
  return spawnSync(process.execPath, [calltraceBin, ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...loopbackReceivers, ...env },
    encoding: "utf8",
  });
}

export interface ServiceProcess {
  port: number;
  url: string;
  child: ChildProcessByStdio<null, Readable, Readable>;
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<number | NodeJS.Signals>;
  /** Every stdout line so far (JSON logs). */
  lines: string[];
}

/** Starts `calltrace serve` as a child process on a free port and waits for its "listening" line. */
export async function startServiceProcess(args: string[], env: NodeJS.ProcessEnv = {}, bin = calltraceBin): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [bin, "serve", "--port", "0", ...args], {
    cwd: repoRoot,
    env: { ...process.env, LOG_LEVEL: "info", ...loopbackReceivers, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | NodeJS.Signals>((resolve) => child.on("exit", (code, signal) => resolve(signal ?? code ?? 0)));
  const port = await new Promise<number>((resolve, reject) => {
    let buffered = "";
    child.stdout.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      let newline: number;
      while ((newline = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        lines.push(line);
        const parsed = JSON.parse(line) as { msg?: string; port?: number };
        if (parsed.msg === "listening" && parsed.port) resolve(parsed.port);
      }
    });
    void exited.then((code) => reject(new Error(`calltrace serve exited (${code}) before listening: ${stderr}`)));
  });
  // Where a worker runs many files (isolate: false) a service left running would slow the next ones.
  atFileEnd(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGKILL");
    await exited;
  });
  return { port, url: `http://127.0.0.1:${port}`, child, exited, lines };
}
