// Readers for the untyped JSON of provider responses and events: a field that
// is missing or of another type reads as `undefined`, never as an exception.

/** The value at `path` inside `value` (objects, or functions such as classes), or `undefined`. */
export function dig(value: unknown, ...path: string[]): unknown {
  let at = value;
  for (const key of path) {
    if (at === null || (typeof at !== "object" && typeof at !== "function")) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/** A non-empty string, else `undefined`. */
export function readString(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** A token count: a finite number, else `undefined`. */
export function readCount(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

/** Adds counts, treating absent ones as 0; `undefined` if all are absent. */
export function sumCounts(...values: unknown[]): number | undefined {
  let total: number | undefined;
  for (const value of values) {
    const count = readCount(value);
    if (count !== undefined) total = (total ?? 0) + count;
  }
  return total;
}
