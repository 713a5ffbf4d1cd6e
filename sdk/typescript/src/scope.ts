import { AsyncLocalStorage } from "node:async_hooks";
import { mergeAttributes, type TraceAttributes } from "./attributes.js";

/** What a `withAttributes()` or `untraced()` scope holds: its merged attributes, and whether calls are traced. */
export interface Scope {
  attributes: TraceAttributes | undefined;
  untraced: boolean;
}

// One store for every copy of this SDK in the process (its ESM and CommonJS
// builds are separate module instances): a scope set through one copy must be
// seen by the patches another copy installed.
const STORE = Symbol.for("calltrace.scope");
const holder = globalThis as { [STORE]?: AsyncLocalStorage<Scope> };
const storage = (holder[STORE] ??= new AsyncLocalStorage<Scope>());

/** The scope the current asynchronous context runs in, if any. */
export function currentScope(): Scope | undefined {
  return storage.getStore();
}

/**
 * Runs `fn` with `attributes` on every call it makes, also after `await`, in
 * `Promise.all` branches and in timers it starts. Nested scopes merge onto
 * the outer one (tags united, metadata merged, the inner value winning).
 * Returns what `fn` returns.
 */
export function withAttributes<T>(attributes: TraceAttributes, fn: () => T): T {
  const outer = storage.getStore();
  return storage.run(
    { attributes: mergeAttributes(outer?.attributes, attributes), untraced: outer?.untraced ?? false },
    fn,
  );
}

/** Runs `fn` with none of its provider calls traced. Returns what `fn` returns. */
export function untraced<T>(fn: () => T): T {
  return storage.run({ attributes: storage.getStore()?.attributes, untraced: true }, fn);
}
