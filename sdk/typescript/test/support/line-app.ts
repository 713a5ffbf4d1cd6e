import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";

/**
 * A Node application that answers one stdout line per stdin line (such as
 * test/apps/budget-app.mjs), run where the packed SDK is installed.
 */
export class LineApp {
  readonly #child: ChildProcess;
  readonly #answers: string[] = [];
  readonly #waiting: Array<(line: string) => void> = [];
  stderr = "";

  constructor(script: string, cwd: string, env: Record<string, string>) {
    this.#child = spawn(process.execPath, [script], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.#child.stderr!.on("data", (chunk) => (this.stderr += chunk));
    createInterface({ input: this.#child.stdout! }).on("line", (line) => {
      const waiter = this.#waiting.shift();
      if (waiter) waiter(line);
      else this.#answers.push(line);
    });
  }

  /** Sends one request line and resolves with the JSON of its answer line. */
  ask(request: object): Promise<any> {
    this.#child.stdin!.write(`${JSON.stringify(request)}\n`);
    const ready = this.#answers.shift();
    if (ready !== undefined) return Promise.resolve(JSON.parse(ready));
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null) =>
        reject(new Error(`the app exited (${code}) before answering:\n${this.stderr}`));
      this.#child.once("exit", onExit);
      this.#waiting.push((line) => {
        this.#child.off("exit", onExit);
        resolve(JSON.parse(line));
      });
    });
  }

  /** Closes its stdin and waits for it to exit. */
  async end(): Promise<number | null> {
    if (this.#child.exitCode !== null) return this.#child.exitCode;
    const exited = new Promise<number | null>((resolve) => this.#child.once("exit", resolve));
    this.#child.stdin!.end();
    return exited;
  }
}
