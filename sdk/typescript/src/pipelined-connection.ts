import net from "node:net";
import tls from "node:tls";

/** What the sender needs from an answer to decide on a retry. */
export interface PostResult {
  status: number;
  /** Seconds from the `retry_after` body field, else the `Retry-After` header. */
  retryAfterSeconds?: number;
  /** The `error` string of an error body, e.g. "Monthly quota exceeded". */
  error?: string;
  /** The `details` or `message` string of an error body. */
  details?: string;
}

export interface PipelinedConnectionOptions {
  /** While requests wait, silence this long drops the connection (they fail and are retried). */
  timeoutMs: number;
  /** An idle connection is closed after this long, before a server's keep-alive timeout can race a new request. */
  idleMs: number;
  /** Extra TLS options for https (a private CA, say). */
  tls?: tls.ConnectionOptions;
}

interface Waiter {
  resolve(result: PostResult): void;
  reject(error: Error): void;
}

const CRLF2 = Buffer.from("\r\n\r\n");

/**
 * Small JSON POSTs over one persistent HTTP/1.1 connection, pipelined: each
 * request is written at once and the answers come back in order. This costs a
 * fraction of node:http's CPU per request, which is most of what tracing adds
 * to a call. Pipelining is safe here because every trace carries an
 * Idempotency-Key (D14): when a connection fails, every request still without
 * an answer fails with it and is retried, and the service stores it once.
 * The socket is unref'd: it never keeps the process alive on its own.
 */
export class PipelinedConnection {
  readonly #url: URL;
  readonly #options: PipelinedConnectionOptions;
  readonly #requestLine: string;
  #socket: net.Socket | undefined;
  #waiting: Waiter[] = [];
  #buffer: Buffer = Buffer.alloc(0);
  #closed = false;
  #corked = false;

  constructor(url: URL, options: PipelinedConnectionOptions) {
    this.#url = url;
    this.#options = options;
    this.#requestLine = `POST ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n`;
  }

  /** Requests written and not yet answered. */
  get pending(): number {
    return this.#waiting.length;
  }

  /**
   * POSTs `body` with `headers` (lines of `Name: value\r\n`, already checked
   * to hold no line breaks of their own). Rejects on network errors, timeouts
   * and close().
   */
  post(headers: string, body: string): Promise<PostResult> {
    if (this.#closed) return Promise.reject(new Error("calltrace: connection closed"));
    const socket = this.#socket ?? this.#connect();
    // Requests posted in the same turn of the event loop leave in one write.
    if (!this.#corked) {
      this.#corked = true;
      socket.cork();
      setImmediate(() => {
        this.#corked = false;
        socket.uncork();
      });
    }
    return new Promise((resolve, reject) => {
      if (this.#waiting.push({ resolve, reject }) === 1) socket.setTimeout(this.#options.timeoutMs);
      socket.write(`${this.#requestLine}${headers}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
  }

  /** Closes for good; requests without an answer fail. */
  close(): void {
    this.#closed = true;
    this.#drop(new Error("calltrace: connection closed"));
  }

  #connect(): net.Socket {
    const port = Number(this.#url.port) || (this.#url.protocol === "https:" ? 443 : 80);
    const host = this.#url.hostname.replace(/^\[|\]$/g, "");
    const socket =
      this.#url.protocol === "https:"
        ? tls.connect({
            host,
            port,
            servername: net.isIP(host) ? undefined : host,
            ALPNProtocols: ["http/1.1"],
            ...this.#options.tls,
          })
        : net.connect({ host, port });
    socket.setNoDelay(true);
    socket.unref();
    socket.on("data", (chunk: Buffer) => this.#receive(socket, chunk));
    socket.on("timeout", () => this.#drop(new Error("calltrace: request timed out"), socket));
    socket.on("error", (error) => this.#drop(error, socket));
    socket.on("close", () => this.#drop(new Error("calltrace: connection closed by the server"), socket));
    this.#socket = socket;
    this.#buffer = Buffer.alloc(0);
    return socket;
  }

  #drop(error: Error, socket = this.#socket): void {
    if (!socket || socket !== this.#socket) return; // an old connection's late event
    this.#socket = undefined;
    socket.destroy();
    for (const waiter of this.#waiting.splice(0)) waiter.reject(error);
  }

  #receive(socket: net.Socket, chunk: Buffer): void {
    if (socket !== this.#socket) return;
    this.#buffer = this.#buffer.length ? Buffer.concat([this.#buffer, chunk]) : chunk;
    for (;;) {
      const response = parseResponse(this.#buffer);
      if (response === undefined) return; // incomplete: wait for more data
      if (response === null) {
        this.#drop(new Error("calltrace: malformed HTTP response"));
        return;
      }
      this.#buffer = this.#buffer.subarray(response.end);
      if (response.status < 200) continue; // 1xx: an interim answer
      const waiter = this.#waiting.shift();
      if (!waiter) {
        this.#drop(new Error("calltrace: unexpected HTTP response"));
        return;
      }
      waiter.resolve(toResult(response));
      if (response.close) {
        this.#drop(new Error("calltrace: connection closed by the server"));
        return;
      }
      if (this.#waiting.length === 0) socket.setTimeout(this.#options.idleMs);
    }
  }
}

interface RawResponse {
  status: number;
  retryAfter: string | undefined;
  body: Buffer;
  close: boolean;
  /** Offset just past this response in the buffer. */
  end: number;
}

/** One response from the start of `buffer`: `undefined` if incomplete, `null` if malformed. */
function parseResponse(buffer: Buffer): RawResponse | null | undefined {
  const headEnd = buffer.indexOf(CRLF2);
  if (headEnd < 0) return buffer.length > 64 * 1024 ? null : undefined;
  const [statusLine = "", ...lines] = buffer.toString("latin1", 0, headEnd).split("\r\n");
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  if (!match) return null;
  const status = Number(match[1]);
  const headers = new Map<string, string>();
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  const start = headEnd + 4;
  const close = /\bclose\b/i.test(headers.get("connection") ?? "");
  const retryAfter = headers.get("retry-after");
  if (status < 200 || status === 204 || status === 304)
    return { status, retryAfter, body: Buffer.alloc(0), close, end: start };
  if (/\bchunked\b/i.test(headers.get("transfer-encoding") ?? "")) {
    const chunked = parseChunked(buffer, start);
    return chunked && { status, retryAfter, body: chunked.body, close, end: chunked.end };
  }
  const length = headers.get("content-length");
  // Without a length the body runs to the end of the connection; only error
  // bodies are read, so take what is there and let the connection go.
  if (length === undefined)
    return { status, retryAfter, body: buffer.subarray(start), close: true, end: buffer.length };
  const end = start + Number(length);
  if (!Number.isSafeInteger(end)) return null;
  return buffer.length < end ? undefined : { status, retryAfter, body: buffer.subarray(start, end), close, end };
}

function parseChunked(buffer: Buffer, start: number): { body: Buffer; end: number } | null | undefined {
  const parts: Buffer[] = [];
  let at = start;
  for (;;) {
    const lineEnd = buffer.indexOf("\r\n", at);
    if (lineEnd < 0) return undefined;
    const size = parseInt(buffer.toString("latin1", at, lineEnd), 16);
    if (!Number.isFinite(size) || size < 0) return null;
    if (size === 0) {
      // The last chunk: optional trailer lines, then an empty line.
      const end = buffer.indexOf(CRLF2, lineEnd);
      return end < 0 ? undefined : { body: Buffer.concat(parts), end: end + 4 };
    }
    const dataEnd = lineEnd + 2 + size;
    if (buffer.length < dataEnd + 2) return undefined;
    parts.push(buffer.subarray(lineEnd + 2, dataEnd));
    at = dataEnd + 2;
  }
}

function toResult({ status, retryAfter, body }: RawResponse): PostResult {
  const result: PostResult = { status };
  if (status < 400) return result;
  let parsed: Record<string, unknown> = {};
  try {
    const value: unknown = JSON.parse(body.toString("utf8"));
    if (value && typeof value === "object") parsed = value as Record<string, unknown>;
  } catch {
    // Not JSON (a proxy's error page, say): the status alone decides.
  }
  if (typeof parsed.error === "string") result.error = parsed.error;
  const details = parsed.details ?? parsed.message;
  if (typeof details === "string") result.details = details;
  const seconds = typeof parsed.retry_after === "number" ? parsed.retry_after : Number(retryAfter ?? NaN);
  if (Number.isFinite(seconds) && seconds >= 0) result.retryAfterSeconds = seconds;
  return result;
}
