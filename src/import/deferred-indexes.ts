import type { Store } from "../store/store.js";

/** `traces import --defer-indexes`: auto (by the rule below), on, or off. */
export type IndexDeferral = "auto" | "on" | "off";
export const indexDeferrals: readonly IndexDeferral[] = ["auto", "on", "off"];

/** An import smaller than this keeps its indexes: building them again would cost more than it saves. */
export const deferFromTraces = 100_000;
/** An exported trace's bytes, about: a file's size over this estimates its traces. */
export const bytesPerTrace = 500;

/**
 * Whether an import of `importing` traces into a store holding `stored` builds the deferrable
 * indexes after its rows (D77): on auto, when it is large and at least doubles the store, as
 * building an index again reads every stored trace, while each trace it saves inserting cost a
 * page written at random, more as the store grows.
 */
export function defersIndexes(mode: IndexDeferral, importing: number, stored: number): boolean {
  if (mode !== "auto") return mode === "on";
  return importing >= deferFromTraces && importing >= stored;
}

/**
 * Runs an import of about `traces` traces with the store's deferrable indexes dropped and built again
 * after it, and its runs summed after it (D81), when `defersIndexes` says so and the store has such
 * indexes (MongoDB builds its own as it goes); says what it does through `say`. Both are built when
 * the import fails too; a killed import's are built by the store's next open.
 */
export async function withIndexesDeferred<T>(
  store: Pick<Store, "deferrableIndexes">,
  mode: IndexDeferral,
  traces: number,
  say: (line: string) => void,
  run: () => Promise<T>,
): Promise<T> {
  const indexes = store.deferrableIndexes;
  if (!indexes || !defersIndexes(mode, traces, indexes.storedTraces())) return run();
  const names = indexes.drop();
  say(`building ${names.length} indexes after the rows: ${names.join(", ")}; the runs roll-up too`);
  try {
    return await run();
  } finally {
    indexes.rebuild((what, ms) => say(`built ${what} in ${(ms / 1000).toFixed(1)} s`));
  }
}
