import { CallTrace, type CallTraceStats } from "./call-trace.js";
import type { InitOptions } from "./options.js";

export type { TraceAttributes } from "./attributes.js";
export { BudgetExceeded } from "./budget-exceeded.js";
export type { BudgetScope } from "./budget-status.js";
export { withCallAttributes } from "./call-attributes.js";
export { DEFAULT_ENDPOINT, type InitOptions } from "./options.js";
export { untraced, withAttributes } from "./scope.js";
export type { Price, PriceOverrides } from "./price-table.js";
export type { Provider, Trace } from "./trace.js";
export type { CallTraceStats };

let current: CallTrace | undefined;

/**
 * Starts tracing every call of the installed provider libraries (openai,
 * @anthropic-ai/sdk, @google/genai). CommonJS copies are patched before this
 * returns; `await` it to be sure the ESM copies are too. Calling it again
 * replaces the previous configuration: the old tracer is unpatched and
 * flushed in the background. Options that cannot work throw a TypeError and
 * leave the previous configuration in place.
 */
export function init(options: InitOptions = {}): Promise<void> {
  const next = new CallTrace(options); // throws on a bad configuration, with the previous one intact
  const previous = current;
  previous?.unpatch();
  current = next;
  void previous?.shutdown();
  return next.start();
}

/** Waits until every trace recorded so far is delivered or given up; `false` if `timeoutMs` passed first. */
export function flush(timeoutMs?: number): Promise<boolean> {
  return current?.flush(timeoutMs) ?? Promise.resolve(true);
}

/** Unpatches, flushes for at most `timeoutMs` (default 10 s), and stops tracing until the next `init()`. */
export function shutdown(timeoutMs?: number): Promise<void> {
  const tracer = current;
  current = undefined;
  return tracer?.shutdown(timeoutMs) ?? Promise.resolve();
}

/** Restores the provider libraries' original methods; traces already recorded are still delivered. */
export function unpatch(): void {
  current?.unpatch();
}

/** Delivery counters (sent, failed, dropped, pending) and the patched packages. */
export function stats(): CallTraceStats {
  return current?.stats() ?? { sent: 0, failed: 0, dropped: 0, pending: 0, instrumented: [] };
}
