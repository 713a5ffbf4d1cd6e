import http from "node:http";
import https from "node:https";

/** What the sender needs from a response to decide on a retry. */
export interface PostResult {
  status: number;
  /** Seconds from the `retry_after` body field, else the `Retry-After` header. */
  retryAfterSeconds?: number;
  /** The `error` string of an error body, e.g. "Monthly quota exceeded". */
  error?: string;
  /** The `details` or `message` string of an error body. */
  details?: string;
}

export interface PostOptions {
  agent: http.Agent;
  timeoutMs: number;
  signal: AbortSignal;
}

// Error bodies are small JSON objects; anything longer is not ours to read.
const MAX_ERROR_BODY = 16 * 1024;

/**
 * POSTs a JSON body and resolves with the status (and, for errors, the parsed
 * error body); rejects on network errors, timeouts and aborts. Built on
 * node:http rather than fetch: it is cheaper per request, and its sockets can
 * be unref'd so that pending traces never keep an application alive on their
 * own (the exit flush decides how long to wait).
 */
export function postJson(
  url: URL,
  headers: Record<string, string>,
  body: string,
  options: PostOptions,
): Promise<PostResult> {
  return new Promise((resolve, reject) => {
    const request = (url.protocol === "https:" ? https : http).request(url, {
      method: "POST",
      agent: options.agent,
      headers: { ...headers, "Content-Length": Buffer.byteLength(body) },
      signal: options.signal,
      timeout: options.timeoutMs,
    });
    request.on("socket", (socket) => socket.unref());
    request.on("timeout", () => request.destroy(new Error("calltrace: request timed out")));
    request.on("error", reject);
    request.on("response", (response) => {
      const status = response.statusCode ?? 0;
      if (status < 400) {
        response.resume();
        response.on("end", () => resolve({ status }));
        response.on("error", reject);
        return;
      }
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        if (text.length < MAX_ERROR_BODY) text += chunk;
      });
      response.on("error", reject);
      response.on("end", () => resolve(errorResult(status, response.headers["retry-after"], text)));
    });
    request.end(body);
  });
}

function errorResult(status: number, retryAfterHeader: string | undefined, text: string): PostResult {
  const result: PostResult = { status };
  let parsed: Record<string, unknown> = {};
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === "object") parsed = value as Record<string, unknown>;
  } catch {
    // Not JSON (a proxy's error page, say): the status alone decides.
  }
  if (typeof parsed.error === "string") result.error = parsed.error;
  const details = parsed.details ?? parsed.message;
  if (typeof details === "string") result.details = details;
  const retryAfter = typeof parsed.retry_after === "number" ? parsed.retry_after : Number(retryAfterHeader);
  if (Number.isFinite(retryAfter) && retryAfter >= 0) result.retryAfterSeconds = retryAfter;
  return result;
}
