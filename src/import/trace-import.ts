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
 * Traces per hand-over to the store: small, so the store's writer starts on the first while the
 * file is still being read, and reading never waits for a commit while the writer has work queued.
 */
export const importChunkSize = 5_000;
/**
 * Traces handed over and not yet stored, at most: the embedded store's writer commits the
 * hand-overs queued behind its last commit together, up to `commitTracesMax` (50,000, D66), so
 * this keeps one such commit running and the next one queued.
 */
const inFlightMax = 100_000;

/**
 * Writes the items' traces into the store through its batch path, not over HTTP, in hand-overs of
 * `importChunkSize` with up to `inFlightMax` traces in flight: reading, checking and converting go
 * on while the store commits (D74). A hand-over the store cannot take stops the import with its
 * error; what was committed stays, and importing again stores only the rest (every imported trace
 * has a key that makes it a duplicate the second time).
 */
export async function importTraces(
  items: AsyncIterable<ImportItem>,
  store: Pick<TraceStore, "writeBatch">,
  onRejected: (rejection: Rejection) => void,
  onProgress: (counts: ImportCounts) => void = () => {},
): Promise<ImportCounts> {
  const counts: ImportCounts = { read: 0, stored: 0, duplicates: 0, rejected: 0 };
  const inFlight: Promise<void>[] = [];
  let chunk: TraceWrite[] = [];
  const handOver = () => {
    const writing = store.writeBatch(chunk).then((outcomes) => {
      for (const outcome of outcomes) {
        if (outcome.kind === "failed") throw outcome.error;
        counts[outcome.kind === "stored" ? "stored" : "duplicates"]++;
      }
      onProgress(counts);
    });
    // A failure surfaces when this hand-over is awaited, in order.
    writing.catch(() => {});
    inFlight.push(writing);
    chunk = [];
  };
  for await (const item of items) {
    counts.read++;
    if ("rejected" in item) {
      counts.rejected++;
      onRejected({ where: item.where, reason: item.rejected });
      continue;
    }
    chunk.push(item.write);
    if (chunk.length >= importChunkSize) {
      if (inFlight.length * importChunkSize >= inFlightMax) await inFlight.shift();
      handOver();
    }
  }
  if (chunk.length > 0) handOver();
  for (const writing of inFlight) await writing;
  onProgress(counts);
  return counts;
}
