import type { ProviderCall } from "./provider-call.js";
import { tracedIterator } from "./traced-iterator.js";

/** How a provider's response bodies and stream events report usage. */
export interface ResponseReader {
  /** Reads a complete (non-streamed) response body. */
  response(call: ProviderCall, body: unknown): void;
  /** Reads one stream event; returns `false` to hide it from the caller. */
  event(call: ProviderCall, event: unknown): boolean;
}

// The parts of the APIPromise that Stainless-generated clients (openai,
// @anthropic-ai/sdk) return from every method. It is a lazy promise: the body
// is parsed only when someone awaits it, and `.asResponse()` hands out the raw
// body unread, so we must not await it ourselves.
interface ApiPromise {
  responsePromise: Promise<unknown>;
  _thenUnwrap(transform: (data: unknown) => unknown): unknown;
}

/**
 * Runs `invoke` (the original method of a Stainless-generated client: openai,
 * @anthropic-ai/sdk) and traces its call. What it returns is an APIPromise of
 * the same class, so `.withResponse()` and `.asResponse()` keep working.
 * Failures are seen on the response promise as soon as they happen and are
 * rethrown to the caller unchanged; usage is read from the body the caller
 * awaits, and for a stream, from its events as the caller reads them.
 */
export function traceStainlessCall(
  call: ProviderCall,
  streamed: boolean,
  reader: ResponseReader,
  invoke: () => unknown,
): unknown {
  let apiPromise: unknown;
  try {
    apiPromise = invoke();
  } catch (error) {
    call.fail(error);
    throw error;
  }
  if (!isApiPromise(apiPromise)) return apiPromise; // an unknown client version: leave it alone
  apiPromise.responsePromise.then(undefined, (error: unknown) => call.fail(error));
  return apiPromise._thenUnwrap((data) => {
    if (streamed) {
      traceStream(data, call, reader);
    } else {
      readQuietly(() => reader.response(call, data));
      call.succeed();
    }
    return data;
  });
}

function traceStream(stream: unknown, call: ProviderCall, reader: ResponseReader): void {
  const target = stream as { iterator?: unknown } | null;
  const source = target?.iterator;
  if (typeof source !== "function") {
    call.succeed(); // not the Stream we know: traced without usage rather than broken
    return;
  }
  call.watch(stream as object); // created, maybe never read
  // Stream keeps its event source in `iterator`; `[Symbol.asyncIterator]`,
  // `tee()` and `toReadableStream()` all read through it.
  target!.iterator = () =>
    tracedIterator(source.call(stream) as AsyncIterator<unknown>, call, (event) => reader.event(call, event));
}

function readQuietly(read: () => void): void {
  try {
    read();
  } catch {
    // A body we cannot read is traced without usage; the caller gets it as is.
  }
}

function isApiPromise(value: unknown): value is ApiPromise {
  const candidate = value as Partial<ApiPromise> | null;
  return typeof candidate?._thenUnwrap === "function" && typeof candidate.responsePromise?.then === "function";
}
