// Shared by every copy of this SDK in a process (its ESM and CommonJS builds
// are separate module instances), so two copies never trace one call twice.
const PATCHED = Symbol.for("calltrace.patched");

type Method = (this: unknown, ...args: unknown[]) => unknown;

/**
 * Replaces `target[name]` (a method on a provider's resource prototype, so
 * clients created before and after `init` are all traced) with `wrap(original)`.
 * Returns the undo function, or `undefined` when there is no such method or
 * a copy of this SDK already patched it. Undo restores the original; if
 * someone has wrapped our wrapper since, it turns ours into a pass-through
 * instead, so their wrapper keeps working.
 */
export function patchMethod(
  target: unknown,
  name: string,
  wrap: (original: Method) => Method,
): (() => void) | undefined {
  if (target === null || typeof target !== "object") return undefined;
  const holder = target as Record<string, unknown>;
  const original = holder[name];
  if (typeof original !== "function" || (original as { [PATCHED]?: boolean })[PATCHED]) return undefined;
  const traced = wrap(original as Method);
  let active = true;
  const wrapper = function (this: unknown, ...args: unknown[]): unknown {
    return (active ? traced : (original as Method)).apply(this, args);
  };
  Object.defineProperty(wrapper, PATCHED, { get: () => active });
  Object.defineProperty(wrapper, "name", { value: original.name });
  holder[name] = wrapper;
  return () => {
    active = false;
    if (holder[name] === wrapper) holder[name] = original;
  };
}
