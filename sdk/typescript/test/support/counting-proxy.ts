import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A proxy in front of the calltrace server that counts the requests it passes
 * (`GET /v1/budget`, `POST /v1/traces`, ...) as their answers end, and can play
 * a budget status that cannot be read (`budgetDown`: the connection is dropped).
 */
export class CountingProxy {
  readonly answered = new Map<string, number>();
  budgetDown = false;
  readonly #server: http.Server;

  private constructor(server: http.Server) {
    this.#server = server;
  }

  static async start(target: string): Promise<CountingProxy> {
    const server = http.createServer();
    const proxy = new CountingProxy(server);
    server.on("request", (request, response) => {
      const name = `${request.method} ${request.url}`;
      if (proxy.budgetDown && request.url === "/v1/budget") {
        request.socket.destroy();
        return;
      }
      const upstream = http.request(
        new URL(request.url!, target),
        { method: request.method, headers: request.headers },
        (answer) => {
          response.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(response);
          answer.on("end", () => proxy.answered.set(name, proxy.count(name) + 1));
        },
      );
      upstream.on("error", () => request.socket.destroy());
      request.pipe(upstream);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  count(name: string): number {
    return this.answered.get(name) ?? 0;
  }

  /** Resolves once `name` has been answered `count` times. */
  async waitFor(name: string, count: number, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.count(name) < count) {
      if (Date.now() > deadline) throw new Error(`${name}: ${this.count(name)} answered, expected ${count}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}
