// Runs in a worker thread: owns the write connection, so fsyncs never block the event loop that
// serves requests, and the next batch gathers while this one is being committed.
import { parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
import { type RowBatch, sqliteBatchCommit } from "./sqlite-batch-commit.js";
import { openSqliteDatabase } from "./sqlite-database.js";

export interface WriteRequest extends RowBatch {
  id: number;
  now: number;
}

/** Every trace of the request was stored, except those at the indexes in `duplicates` (a repeated Idempotency-Key). */
export type WriteReply = { id: number; duplicates: number[] } | { id: number; error: string };

/** Asks the worker to close its database and end (rather than being terminated mid-flight). */
export interface CloseRequest {
  close: true;
}

const db = openSqliteDatabase((workerData as { file: string }).file);
const commit = sqliteBatchCommit(db);

const port = parentPort!;

// Group commit across batches: the batches that queued up while the last commit ran go
// together in the next one, with one fsync; each batch gets its own outcomes back.
port.on("message", (first: WriteRequest | CloseRequest) => {
  if ("close" in first) return close();
  const requests = [first];
  let closing = false;
  for (let next = receiveMessageOnPort(port); next; next = receiveMessageOnPort(port)) {
    const message = next.message as WriteRequest | CloseRequest;
    if ("close" in message) closing = true;
    else requests.push(message);
  }
  try {
    const merged: RowBatch =
      requests.length === 1
        ? first
        : { traces: requests.flatMap((r) => r.traces), idempotencyKeys: requests.flatMap((r) => r.idempotencyKeys) };
    const duplicates = commit(merged, requests[requests.length - 1]!.now);
    let start = 0;
    for (const { id, traces } of requests) {
      const end = start + traces.length;
      const reply: WriteReply = { id, duplicates: duplicates.filter((i) => i >= start && i < end).map((i) => i - start) };
      port.postMessage(reply);
      start = end;
    }
  } catch (error) {
    for (const { id } of requests) {
      const reply: WriteReply = { id, error: error instanceof Error ? error.message : String(error) };
      port.postMessage(reply);
    }
  }
  if (closing) close();
});

/**
 * Closing the database before the thread ends finalizes its statements while the thread is
 * alive: a terminated thread leaves them to be destroyed after it (on Node 24 that aborts the
 * process inside better-sqlite3).
 */
function close(): void {
  db.close();
  port.close();
}
