/** A token count from a provider body: a finite number, else `undefined`. */
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
