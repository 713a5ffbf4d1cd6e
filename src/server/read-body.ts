import type { NodeRequest } from "./node-types.js";

export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`request body exceeds ${limit} bytes`);
  }
}

/** The client went away (or its stream broke) before the body was complete: there is no one to answer. */
export class ClientAbortedError extends Error {
  constructor(cause?: Error) {
    super("the client aborted the request", cause ? { cause } : undefined);
  }
}

/** A larger limit for a body whose first `limit` bytes show that it may have it (an OTLP JSON Export). */
export interface LargerLimit {
  limit: number;
  allowed: (head: Buffer) => boolean;
}

/**
 * Reads the whole body, refusing at once when Content-Length announces too much and stopping
 * at the limit for bodies without a length (chunked), so an oversized body is never buffered (D9).
 * With `larger`, a body past `limit` is asked, once, whether it may grow to `larger.limit`.
 * The listeners are anonymous and stay until the request is gone, `done` silencing them once the
 * body is settled: this runs for every request, and under tsx each named closure would also cost
 * a defineProperty (esbuild's keepNames).
 */
export function readBody(req: NodeRequest, limit: number, larger?: LargerLimit): Promise<Buffer> {
  const announced = Number(req.headers["content-length"]);
  if (announced > (larger?.limit ?? limit)) return Promise.reject(new BodyTooLargeError(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on("data", (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      if (larger !== undefined && limit < larger.limit && larger.allowed(Buffer.concat([...chunks, chunk]))) {
        limit = larger.limit;
        if (size <= limit) {
          chunks.push(chunk);
          return;
        }
      }
      done = true;
      req.pause();
      reject(new BodyTooLargeError(limit));
    });
    req.on("end", () => {
      if (done) return;
      done = true;
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    });
    req.on("error", (error: Error) => {
      if (done) return;
      done = true;
      reject(new ClientAbortedError(error));
    });
    req.on("aborted", () => {
      if (done) return;
      done = true;
      reject(new ClientAbortedError());
    });
  });
}
