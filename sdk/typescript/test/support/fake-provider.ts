import http from "node:http";
import type { AddressInfo } from "node:net";
import { anthropicMessagesFixture } from "./anthropic-fixtures.js";
import { geminiEmbedFixture, geminiFixture } from "./gemini-fixtures.js";
import { openaiChatFixture, openaiEmbeddingsFixture, openaiResponsesFixture } from "./openai-fixtures.js";
import { encodeSse, type SseEvent } from "./sse.js";

/** One provider endpoint of the fake: its documented bodies and events. */
export interface ProviderFixture {
  /** Line ending of its event stream (Gemini uses CRLF). */
  newline?: string;
  matches(path: string): boolean;
  isStream(path: string, body: any): boolean;
  response(path: string, body: any): unknown;
  events(path: string, body: any): SseEvent[];
  /** The error event the provider sends when generation fails mid-stream. */
  midStreamError: SseEvent;
  errorBody(status: number): unknown;
}

/** How the fake answers, until changed. */
export type Scenario =
  | { kind: "ok" }
  | { kind: "status"; status: number }
  | { kind: "stream-error"; after: number }
  | { kind: "stream-cut"; after: number };

export interface ReceivedRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

const FIXTURES = [
  openaiChatFixture,
  openaiResponsesFixture,
  openaiEmbeddingsFixture,
  anthropicMessagesFixture,
  geminiFixture,
  geminiEmbedFixture,
];

/**
 * A local HTTP server that answers like OpenAI, Anthropic and Gemini, so the
 * providers' real client libraries can be pointed at it with their base URL
 * options: JSON bodies, server-sent-event streams, error bodies and broken
 * streams, as the providers document them.
 */
export class FakeProvider {
  scenario: Scenario = { kind: "ok" };
  /** Time before answering a request (headers and all), and between stream events. */
  delays = { responseMs: 0, eventMs: 0 };
  readonly requests: ReceivedRequest[] = [];
  readonly #server: http.Server;

  private constructor(server: http.Server) {
    this.#server = server;
  }

  static async start(): Promise<FakeProvider> {
    const server = http.createServer({ keepAliveTimeout: 60_000 });
    const fake = new FakeProvider(server);
    server.on("request", (request, response) => void fake.#handle(request, response));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return fake;
  }

  /** `http://127.0.0.1:<port>`: OpenAI clients take `${url}/v1`, the others `url`. */
  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  async #handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    let text = "";
    for await (const part of request) text += part;
    const path = (request.url ?? "").split("?")[0]!;
    const body = text ? JSON.parse(text) : {};
    this.requests.push({ path, headers: request.headers, body });
    const fixture = FIXTURES.find((f) => f.matches(path));
    if (!fixture) {
      response.writeHead(404, { "content-type": "application/json" }).end('{"error":"not found"}');
      return;
    }
    const scenario = this.scenario;
    const { responseMs, eventMs } = this.delays;
    if (responseMs > 0) await new Promise((resolve) => setTimeout(resolve, responseMs));
    // The client gave up meanwhile (an abort): nothing to answer.
    const gone = () => response.destroyed || !response.socket || response.socket.destroyed;
    if (gone()) return;
    if (scenario.kind === "status") {
      response
        .writeHead(scenario.status, { "content-type": "application/json", "x-request-id": "req_fake" })
        .end(JSON.stringify(fixture.errorBody(scenario.status)));
      return;
    }
    if (!fixture.isStream(path, body)) {
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(fixture.response(path, body)));
      return;
    }
    let events = fixture.events(path, body);
    if (scenario.kind !== "ok") events = events.slice(0, scenario.after);
    if (scenario.kind === "stream-error") events.push(fixture.midStreamError);
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    for (const [index, event] of events.entries()) {
      if (index > 0 && eventMs > 0) await new Promise((resolve) => setTimeout(resolve, eventMs));
      if (gone()) return;
      response.write(encodeSse(event, fixture.newline));
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (scenario.kind === "stream-cut") response.destroy();
    else response.end();
  }
}
