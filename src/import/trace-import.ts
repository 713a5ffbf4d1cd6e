import type { TraceStore, TraceWrite } from "../store/trace-store.js";
import type { ImportItem } from "./import-item.js";

/** What an import did with the traces it read. */
export interface ImportCounts {
  read: number;
  stored: number;
  /** Stored before (an earlier import of the same trace, or the same OTLP call received live). */
  duplicates: number;
  rejected: number;
}

export interface Rejection {
  where: string;
  reason: string;
}

/**
 * Traces per batch: one transaction each in the embedded store. Larger than a live batch (D13):
 * a commit writes each page it dirtied once however many rows changed it, and a trace's user,
 * session, cost, latency, tokens and run put it on a page of its own in each of those indexes, so
 * past half a million traces nearly every one dirtied pages of their own: 50,000 a commit write a
 * quarter of the bytes 10,000 did (bench/RESULTS.md, D66). A commit holds the write lock for
 * 2-3 s on a quiet machine, within the 5 s a server sharing the file waits for it (sqlite-write-worker.ts).
 */
export const importBatchSize = 50_000;

/**
 * Writes the items' traces into the store through its batch path, not over HTTP: batches of
 * `importBatchSize`, the next one read while the last is committed. A batch the store cannot
 * take stops the import with its error; what was committed stays, and importing again stores
 * only the rest (every imported trace has a key that makes it a duplicate the second time).
 */
export async function importTraces(
  items: AsyncIterable<ImportItem>,
  store: Pick<TraceStore, "writeBatch">,
  onRejected: (rejection: Rejection) => void,
  onProgress: (counts: ImportCounts) => void = () => {},
): Promise<ImportCounts> {
  const counts: ImportCounts = { read: 0, stored: 0, duplicates: 0, rejected: 0 };
  let batch: TraceWrite[] = [];
  let committing: Promise<void> = Promise.resolve();
  const commit = async (writes: TraceWrite[]) => {
    const outcomes = await store.writeBatch(writes);
    for (const outcome of outcomes) {
      if (outcome.kind === "failed") throw outcome.error;
      counts[outcome.kind === "stored" ? "stored" : "duplicates"]++;
    }
    onProgress(counts);
  };
  for await (const item of items) {
    counts.read++;
    if ("rejected" in item) {
      counts.rejected++;
      onRejected({ where: item.where, reason: item.rejected });
      continue;
    }
    batch.push(item.write);
    if (batch.length >= importBatchSize) {
      await committing;
      committing = commit(batch);
      // Reading goes on while this batch commits; its failure surfaces at the next await.
      committing.catch(() => {});
      batch = [];
    }
  }
  await committing;
  if (batch.length > 0) await commit(batch);
  onProgress(counts);
  return counts;
}
