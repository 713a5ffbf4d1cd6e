import { spawn } from "node:child_process";
import { repoRoot } from "./cli.js";

export interface ProcessResult {
  status: number | null;
  stdout: string;
  stderr: string;
  /** stdout and stderr interleaved as they came. */
  output: string;
}

/**
 * Runs a command to completion without blocking the event loop (the service under test answers
 * from this same process), optionally feeding it `input` on stdin; kills it after `timeoutMs`.
 */
export function runProcess(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; input?: string | Uint8Array; timeoutMs: number },
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? repoRoot,
      env: { ...process.env, ...options.env },
      stdio: "pipe",
    });
    const result: ProcessResult = { status: null, stdout: "", stderr: "", output: "" };
    child.stdout.on("data", (chunk: Buffer) => {
      result.stdout += chunk.toString();
      result.output += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      result.stderr += chunk.toString();
      result.output += chunk.toString();
    });
    child.stdin.end(options.input ?? "");
    const timer = setTimeout(() => {
      result.output += `\n[killed after ${options.timeoutMs} ms]`;
      child.kill("SIGKILL");
    }, options.timeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(new Error(`${command} could not be started: ${error.message}`));
    });
    child.on("close", (status) => {
      clearTimeout(timer);
      result.status = status;
      resolve(result);
    });
  });
}
