import { Code, ConnectError } from "@connectrpc/connect";
import { sendJson } from "../server/json-response.js";
import type { NodeResponse } from "../server/node-types.js";

/** A download's refusal: the status of its ConnectError (400 for anything else) and its message, as JSON. */
export function refuseDownload(res: NodeResponse, error: unknown): void {
  if (!(error instanceof ConnectError)) {
    sendJson(res, httpStatusOf(Code.InvalidArgument), { error: (error as Error).message });
    return;
  }
  // A limit's refusal carries retry-after and the rate-limit headers.
  sendJson(res, httpStatusOf(error.code), { error: error.rawMessage }, Object.fromEntries(error.metadata));
}

/**
 * Streams `lines` as an attachment named `calltrace-<name>-<time>.<extension>`, waiting on the
 * socket when it is full (a download of millions of rows never sits in memory), and stopping when
 * the client goes away.
 */
export async function sendDownload(
  res: NodeResponse,
  file: { name: string; extension: string; contentType: string; headers?: Record<string, string> },
  lines: AsyncIterable<string>,
): Promise<void> {
  const stamp = new Date().toISOString().slice(0, 19).replace(/[:T]/g, "-");
  res.writeHead(200, {
    "content-type": file.contentType,
    "content-disposition": `attachment; filename="calltrace-${file.name}-${stamp}.${file.extension}"`,
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    ...file.headers,
  });
  for await (const line of lines) {
    if (res.destroyed) return;
    if (!res.write(line)) await new Promise((resolve) => res.once("drain", resolve));
  }
  res.end();
}

/** The HTTP status of a refusal of a dashboard route. */
export function httpStatusOf(code: Code): number {
  switch (code) {
    case Code.Unauthenticated:
      return 401;
    case Code.PermissionDenied:
      return 403;
    case Code.NotFound:
      return 404;
    case Code.ResourceExhausted:
      return 429;
    default:
      return 400;
  }
}
