import http from "node:http";
import type { AddressInfo } from "node:net";

/** A trace POST as the fake service received it. */
export interface ReceivedTrace {
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
  receivedAt: number;
}

/** What the fake answers: a status and body (after `delayMs`), `"hang"` (never answer) or `"reset"` (drop the connection). */
export type Answer =
  | { status: number; body?: unknown; headers?: Record<string, string>; delayMs?: number }
  | "hang"
  | "reset";

const ACCEPTED: Answer = { status: 202, body: { status: "ok" } };

/**
 * A stand-in for the calltrace service on a local port: records every trace
 * and answers what the test asks for (202 by default, or 429, 503, a hang).
 */
export class FakeCalltrace {
  readonly received: ReceivedTrace[] = [];
  /** Answers for the next requests, in order; then 202. */
  readonly answers: Answer[] = [];
  /** What GET /v1/budget answers (a BudgetStatus body by default), and the requests it had. */
  budget: Answer = { status: 200, body: { projectId: "p_fake", budgets: [] } };
  readonly budgetRequests: http.IncomingHttpHeaders[] = [];
  readonly #server: http.Server;
  readonly #waiters = new Set<() => void>();

  private constructor(server: http.Server) {
    this.#server = server;
  }

  static async start(): Promise<FakeCalltrace> {
    const server = http.createServer();
    const fake = new FakeCalltrace(server);
    server.on("request", (request, response) => void fake.#handle(request, response));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return fake;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/v1/traces`;
  }

  /** Resolves with the received traces once there are at least `count`. */
  async waitFor(count: number, timeoutMs = 5_000): Promise<ReceivedTrace[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.received.length < count) {
      if (Date.now() > deadline) throw new Error(`expected ${count} traces, got ${this.received.length}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        this.#waiters.add(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.received;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  async #handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    let text = "";
    for await (const part of request) text += part;
    if (request.method === "GET" && request.url === "/v1/budget") {
      this.budgetRequests.push(request.headers);
      await this.#answer(this.budget, request, response);
      return;
    }
    this.received.push({ headers: request.headers, body: JSON.parse(text), receivedAt: Date.now() });
    for (const wake of this.#waiters) wake();
    this.#waiters.clear();
    await this.#answer(this.answers.shift() ?? ACCEPTED, request, response);
  }

  async #answer(answer: Answer, request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    if (answer === "hang") return;
    if (answer === "reset") {
      request.socket.destroy();
      return;
    }
    if (answer.delayMs) await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
    response
      .writeHead(answer.status, { "content-type": "application/json", ...answer.headers })
      .end(answer.body === undefined ? "" : JSON.stringify(answer.body));
  }
}
