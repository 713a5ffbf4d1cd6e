import type { Collection } from "mongodb";
import { withTimeLimit } from "../time-limit.js";
import type { IdempotencyDoc } from "./mongo-collections.js";

export interface ClaimReadsOptions {
  /**
   * Bound on one read. Longer than a request's time: a read that outlasts the retry that started
   * it still finishes, and answers the retries after it.
   */
  timeoutMs: number;
  /** Reads sent to the server at once; the others wait their turn. */
  concurrency: number;
  /** How long a claim once read is used instead of reading it again. */
  rememberMs: number;
  /** Most claims remembered, and most reads waiting. */
  maxEntries: number;
}

/**
 * Reads of earlier Idempotency-Key claims, for the writes whose claim was refused as a duplicate
 * _id. MongoDB reads a claim from its _id index in a millisecond; FerretDB 1.24 scans the
 * collection (0.4 s for the newest of 100k claims, docs/mongodb.md), and retries answered 503
 * because their read outlasted the request retried forever. So one read serves every write that
 * needs the same claim, runs on past the request that started it, and what it read is
 * remembered for the retries that follow; a few reads run at once, so retries of old traces
 * cannot take the server from every other key's writes.
 *
 * Remembering a claim is safe because on collections with a unique trace _id a claim is never
 * deleted within its window and keeps its trace id (mongo-trace-writer.ts); where a claim can be
 * released (time-series collections), the writer forgets it, and a stale trace id fails the
 * conditional takeover instead of storing a second copy.
 */
export function mongoClaimReads(idempotency: Collection<IdempotencyDoc>, options: ClaimReadsOptions) {
  const known = new Map<string, { doc: IdempotencyDoc; until: number }>();
  const reading = new Map<string, Promise<IdempotencyDoc | null | undefined>>();
  const turns: (() => void)[] = [];
  let running = 0;

  const remember = (doc: IdempotencyDoc) => {
    known.delete(doc._id);
    known.set(doc._id, { doc, until: Date.now() + options.rememberMs });
    // The oldest remembered claim goes first (a Map iterates in insertion order).
    if (known.size > options.maxEntries) known.delete(known.keys().next().value!);
  };

  const readNow = async (id: string): Promise<IdempotencyDoc | null> => {
    if (running >= options.concurrency) await new Promise<void>((resolve) => turns.push(resolve));
    else running++;
    try {
      const work = idempotency.findOne({ _id: id }, { timeoutMS: options.timeoutMs });
      return await withTimeLimit(work, options.timeoutMs, () => new Error("reading an earlier claim timed out"));
    } finally {
      // The turn passes to the next waiting read, or is given up.
      const next = turns.shift();
      if (next) next();
      else running--;
    }
  };

  return {
    /**
     * The claim with this _id: null when there is none, undefined when it could not be read (the
     * write then fails, and its retry reads again). Never rejects.
     */
    read(id: string): Promise<IdempotencyDoc | null | undefined> {
      const entry = known.get(id);
      if (entry && entry.until > Date.now()) return Promise.resolve(entry.doc);
      if (entry) known.delete(id);
      const pending = reading.get(id);
      if (pending) return pending;
      if (reading.size >= options.maxEntries) return Promise.resolve(undefined);
      const read = readNow(id)
        .then(
          (doc) => {
            if (doc) remember(doc);
            return doc;
          },
          () => undefined,
        )
        .finally(() => reading.delete(id));
      reading.set(id, read);
      return read;
    },
    /** A claim as the writer has just made or changed it. */
    remember,
    /** A claim that may have been released or replaced. */
    forget(id: string): void {
      known.delete(id);
    },
  };
}

export type ClaimReads = ReturnType<typeof mongoClaimReads>;
