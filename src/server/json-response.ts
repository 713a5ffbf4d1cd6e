import type { NodeResponse } from "./node-types.js";

/** A response's headers: a Headers instance, or a plain object (built on the hot path, where a Headers costs more). */
export type ResponseHeaders = Headers | Record<string, string>;

/** Writes a JSON body with its status and headers, unless the client has gone already. */
export function sendJson(res: NodeResponse, status: number, body: unknown, headers?: ResponseHeaders): void {
  sendJsonText(res, status, JSON.stringify(body), headers);
}

/** Writes JSON that is already serialized. */
export function sendJsonText(res: NodeResponse, status: number, payload: string, headers?: ResponseHeaders): void {
  sendPayload(res, status, "application/json", payload, headers);
}

/**
 * Writes a whole response, its headers in one writeHead: on an HTTP/1.1 response with no header
 * set yet, Node writes them straight out, without setHeader's bookkeeping per header (about 1 µs
 * of the REST hot path's 8 headers). Headers set earlier still go first.
 */
export function sendPayload(res: NodeResponse, status: number, contentType: string, payload: string | Uint8Array, headers?: ResponseHeaders): void {
  if (res.headersSent || res.destroyed) return;
  const fields: Record<string, string | number> = headers instanceof Headers ? Object.fromEntries(headers) : Object.assign({}, headers);
  fields["content-type"] = contentType;
  fields["content-length"] = typeof payload === "string" ? Buffer.byteLength(payload) : payload.byteLength;
  res.writeHead(status, fields);
  res.end(payload);
}
