import type { NodeRequest } from "./node-types.js";

export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`request body exceeds ${limit} bytes`);
  }
}

/**
 * Reads the whole body, refusing at once when Content-Length announces too much and stopping
 * at the limit for bodies without a length (chunked), so an oversized body is never buffered (D9).
 */
export function readBody(req: NodeRequest, limit: number): Promise<Buffer> {
  const announced = Number(req.headers["content-length"]);
  if (announced > limit) return Promise.reject(new BodyTooLargeError(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.pause();
        reject(new BodyTooLargeError(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const onAborted = () => onError(new Error("the client aborted the request"));
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("aborted", onAborted);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("aborted", onAborted);
  });
}
