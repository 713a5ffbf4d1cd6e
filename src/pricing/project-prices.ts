import type { PriceStore } from "../store/price-store.js";
import { PriceBook } from "./price-match.js";

/**
 * How old a project's cached prices may get before they are read again: a change made through
 * another instance applies here within this long (on this instance, at once).
 */
export const customPricesRefreshMs = 2000;
// Projects whose books are cached; past it the cache starts over (a book is one small read).
const maxCachedProjects = 10_000;

interface Cached {
  book: PriceBook;
  loadedAt: number;
  refreshing: boolean;
}

/** Each project's custom prices, cached so that pricing a call costs a map lookup. */
export interface ProjectPrices {
  /** The project's prices: at once when cached, else once read from the store (which may reject). */
  book(projectId: string): PriceBook | Promise<PriceBook>;
  /** Reads the project's prices again on next use (after a change made through this instance). */
  changed(projectId: string): void;
}

export function projectPrices(store: PriceStore, refreshMs = customPricesRefreshMs): ProjectPrices {
  const cache = new Map<string, Cached>();
  const loading = new Map<string, Promise<PriceBook>>();
  // Bumped by a change, so that a read begun before it cannot put the old prices back.
  let generation = 0;

  const load = (projectId: string): Promise<PriceBook> => {
    let pending = loading.get(projectId);
    if (!pending) {
      const startedAt = Date.now();
      const startedIn = generation;
      pending = store
        .listPrices(projectId)
        .then((prices) => {
          const book = new PriceBook(prices);
          if (startedIn === generation) {
            if (cache.size >= maxCachedProjects) cache.clear();
            cache.set(projectId, { book, loadedAt: startedAt, refreshing: false });
          }
          return book;
        })
        .finally(() => {
          if (loading.get(projectId) === pending) loading.delete(projectId);
        });
      loading.set(projectId, pending);
    }
    return pending;
  };

  return {
    book(projectId) {
      const cached = cache.get(projectId);
      if (!cached) return load(projectId);
      // Stale: answered from the cache while it is read again, so no call waits on the store for it.
      if (!cached.refreshing && Date.now() - cached.loadedAt >= refreshMs) {
        cached.refreshing = true;
        load(projectId).catch(() => {
          cached.refreshing = false;
        });
      }
      return cached.book;
    },
    changed(projectId) {
      generation += 1;
      cache.delete(projectId);
      loading.delete(projectId);
    },
  };
}
