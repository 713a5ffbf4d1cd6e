import { traceBody } from "./test-service.js";

/** What became of one request of a load. */
export interface LoadResult {
  /** The request's number; sent as tokens_in, so the stored trace tells which request it was. */
  n: number;
  /** HTTP status, or 0 when the connection failed or the request timed out. */
  status: number;
  /** The `retry_after` of a 503 body. */
  retryAfter?: number;
  /** From sending to the answer (or the failure), in milliseconds. */
  ms: number;
}

export interface LoadOptions {
  url: () => string;
  key: string;
  /** Requests in flight at once. */
  concurrency: number;
  /** Called before each request; the load ends when it returns false. */
  keepGoing: (results: LoadResult[]) => boolean;
  /** Send `Idempotency-Key: t-<n>` with each request. */
  idempotent?: boolean;
  /** Give up on a request after this long (counted as status 0). */
  timeoutMs?: number;
  /** A hard cap on requests, so a load always ends. */
  maxRequests?: number;
  /** Told of each answer as it comes. */
  onResult?: (result: LoadResult) => void;
}

/** Sends traces numbered 0, 1, 2… from `concurrency` senders until told to stop. */
export async function runLoad(options: LoadOptions): Promise<LoadResult[]> {
  const results: LoadResult[] = [];
  const max = options.maxRequests ?? 50_000;
  let next = 0;
  const sender = async () => {
    while (next < max && options.keepGoing(results)) {
      const result = await send(options, next++);
      results.push(result);
      options.onResult?.(result);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, sender));
  return results;
}

/** Sends trace number `n` once. */
export async function send(options: Pick<LoadOptions, "url" | "key" | "idempotent" | "timeoutMs">, n: number): Promise<LoadResult> {
  const started = performance.now();
  try {
    const response = await fetch(`${options.url()}/v1/traces`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${options.key}`,
        ...(options.idempotent ? { "idempotency-key": `t-${n}` } : {}),
      },
      body: JSON.stringify(traceBody(options.key, { tokens_in: n })),
      ...(options.timeoutMs ? { signal: AbortSignal.timeout(options.timeoutMs) } : {}),
    });
    const body = (await response.json().catch(() => ({}))) as { retry_after?: number };
    return {
      n,
      status: response.status,
      ms: performance.now() - started,
      ...(body.retry_after === undefined ? {} : { retryAfter: body.retry_after }),
    };
  } catch {
    return { n, status: 0, ms: performance.now() - started };
  }
}
