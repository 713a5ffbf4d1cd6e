import { maxHeaderSize } from "node:http";
import type { Socket } from "node:net";
import { requestIdOf } from "../observability/request-id.js";

/** What a request that exceeds the request timeout is told, on HTTP/1.1 here and on an HTTP/2 stream by listen.ts. */
export const requestTimeoutBody = JSON.stringify({ error: "Request timeout" });

/** The JSON answers, as the OpenAPI document gives them, to requests Node's HTTP/1.1 parser refuses. */
const jsonAnswers: Record<string, [status: number, reason: string, body: string]> = {
  HPE_HEADER_OVERFLOW: [
    431,
    "Request Header Fields Too Large",
    JSON.stringify({ error: "Request header fields too large", details: `The request line and headers exceed ${maxHeaderSize} bytes.` }),
  ],
  ERR_HTTP_REQUEST_TIMEOUT: [408, "Request Timeout", requestTimeoutBody],
};
/** Node's own answers to the rest. */
const bareAnswers: Record<string, string> = { HPE_CHUNK_EXTENSIONS_OVERFLOW: "413 Payload Too Large" };

function answer(code: string | undefined): string {
  const json = code ? jsonAnswers[code] : undefined;
  if (!json) return `HTTP/1.1 ${(code && bareAnswers[code]) ?? "400 Bad Request"}\r\nConnection: close\r\n\r\n`;
  const [status, reason, body] = json;
  // The request's headers were never read: the id is a new one.
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestIdOf(undefined)}\r\nConnection: close\r\n\r\n${body}`;
}

/**
 * A 'clientError' listener in place of Node's, which answers the same statuses with no body: a
 * URL over the header limit (431) then says why. As Node does, it answers only when no response
 * on the connection has begun, so the client never reads a status inside another response.
 */
export function answerClientError(
  error: NodeJS.ErrnoException,
  socket: Socket,
  latest: { headersSent: boolean; writableFinished: boolean } | undefined,
): void {
  if (socket.writable && (!latest?.headersSent || latest.writableFinished)) socket.write(answer(error.code));
  socket.destroy(error);
}
