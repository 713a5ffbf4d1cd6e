import type { NodeResponse } from "./node-types.js";

/** Writes a JSON body with its status and headers, unless the client has gone already. */
export function sendJson(res: NodeResponse, status: number, body: unknown, headers?: Headers | Record<string, string>): void {
  sendJsonText(res, status, JSON.stringify(body), headers);
}

/** Writes JSON that is already serialized. */
export function sendJsonText(res: NodeResponse, status: number, payload: string, headers?: Headers | Record<string, string>): void {
  if (res.headersSent || res.destroyed) return;
  for (const [name, value] of headers instanceof Headers ? headers : Object.entries(headers ?? {})) res.setHeader(name, value);
  res.setHeader("content-type", "application/json");
  res.setHeader("content-length", Buffer.byteLength(payload));
  res.writeHead(status);
  res.end(payload);
}
