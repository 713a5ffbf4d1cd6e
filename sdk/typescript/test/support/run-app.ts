import { execFile } from "node:child_process";

export interface AppRun {
  stdout: string;
  stderr: string;
  code: number | null;
  /** Date.now() when the process exited. */
  exitedAt: number;
}

/** Runs a Node script to its exit; never rejects, so tests can check the exit itself. */
export function runApp(script: string, env: Record<string, string>, cwd?: string): Promise<AppRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [script],
      { env: { ...process.env, ...env }, cwd, timeout: 30_000 },
      (error, stdout, stderr) => {
        resolve({ stdout, stderr, code: error ? ((error as { code?: number }).code ?? 1) : 0, exitedAt: Date.now() });
      },
    );
  });
}
