// Runs in a worker thread: owns the write connection, so fsyncs never block the event loop that
// serves requests, and the next batch gathers while this one is being committed.
import { parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
import { commitTracesMax, type Duplicates, type RowBatch, sqliteBatchCommit } from "./sqlite-batch-commit.js";
import { openSqliteWriter } from "./sqlite-database.js";
import { valueCap } from "../value-cap.js";
import type { WriterThreadData } from "./sqlite-writer-thread.js";

export interface WriteRequest extends RowBatch {
  id: number;
  now: number;
}

/** Every trace of the request was stored, except the `duplicates` (a repeated Idempotency-Key). */
export type WriteReply = { id: number; duplicates: Duplicates } | { id: number; error: string };

/** Asks the worker to close its database and end (rather than being terminated mid-flight). */
export interface CloseRequest {
  close: true;
}

/**
 * While another process holds the write lock, a commit is tried again every `busyRetryMs` for up
 * to `busyPatienceMs`. SQLite's own busy handler would wait inside one native call, deaf to a
 * close request and impossible to terminate: shutdown then overran its grace period and the
 * process aborted on exit.
 */
const busyTimeoutMs = 20;
const busyRetryMs = 20;
const busyPatienceMs = 5000;

const { file, groupValuesPerDay, commitTracesMax: tracesMax = commitTracesMax, attributeSets } = workerData as WriterThreadData;
const db = openSqliteWriter(file, busyTimeoutMs);
const commit = sqliteBatchCommit(db, valueCap(groupValuesPerDay), undefined, attributeSets);

const port = parentPort!;
let committing = false;
let closing = false;
const queued: WriteRequest[] = [];

port.on("message", (message: WriteRequest | CloseRequest) => {
  take(message);
  if (!committing) commitQueued();
});

function take(message: WriteRequest | CloseRequest): void {
  if ("close" in message) closing = true;
  else queued.push(message);
}

/**
 * Group commit across batches: the batches that queued up while the last commit ran go together
 * in the next one, with one fsync, up to `commitTracesMax` traces (the rest wait for the next);
 * each batch gets its own outcomes back.
 */
function commitQueued(): void {
  for (let next = receiveMessageOnPort(port); next; next = receiveMessageOnPort(port)) take(next.message as WriteRequest | CloseRequest);
  if (queued.length === 0) {
    if (closing) close();
    return;
  }
  let taken = 0;
  for (let traces = 0; taken < queued.length && (taken === 0 || traces + queued[taken]!.traces.length <= tracesMax); taken++)
    traces += queued[taken]!.traces.length;
  const requests = queued.splice(0, taken);
  const merged: RowBatch =
    requests.length === 1
      ? requests[0]!
      : {
          traces: requests.flatMap((r) => r.traces),
          idempotencyKeys: requests.flatMap((r) => r.idempotencyKeys),
          quotaRemaining: requests.flatMap((r) => r.quotaRemaining),
          // Counting a deferring request's runs now is exact too: its rows are then noted nowhere.
          deferRuns: requests.every((r) => r.deferRuns),
        };
  const giveUpAt = Date.now() + busyPatienceMs;
  committing = true;
  const attempt = (): void => {
    try {
      reply(requests, commit(merged, requests[requests.length - 1]!.now));
    } catch (error) {
      if (isBusy(error) && !closing && Date.now() < giveUpAt) return void setTimeout(attempt, busyRetryMs);
      const text = error instanceof Error ? error.message : String(error);
      for (const { id } of requests) port.postMessage({ id, error: text } satisfies WriteReply);
    }
    // The next commit starts from the event loop, not inside this one's stack: an import keeps the
    // queue full, and commits nested each in the last kept every earlier batch reachable (the
    // writer's heap grew about 1.5 KB per imported trace until it ran out at 4.8 million).
    setImmediate(() => {
      committing = false;
      commitQueued();
    });
  };
  attempt();
}

/** Each request gets its own duplicates, by its own indexes (the merged batch's are in order). */
function reply(requests: WriteRequest[], duplicates: Duplicates): void {
  let start = 0;
  let d = 0;
  for (const { id, traces } of requests) {
    const end = start + traces.length;
    const own: Duplicates = { indexes: [], quotaRemaining: [] };
    for (; d < duplicates.indexes.length && duplicates.indexes[d]! < end; d++) {
      own.indexes.push(duplicates.indexes[d]! - start);
      own.quotaRemaining.push(duplicates.quotaRemaining[d]!);
    }
    port.postMessage({ id, duplicates: own } satisfies WriteReply);
    start = end;
  }
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: string } | undefined)?.code;
  return code === "SQLITE_BUSY" || code === "SQLITE_BUSY_SNAPSHOT" || code === "SQLITE_LOCKED";
}

/**
 * Closing the database before the thread ends finalizes its statements while the thread is
 * alive: a terminated thread leaves them to be destroyed after it (on Node 24 that aborts the
 * process inside better-sqlite3).
 */
function close(): void {
  db.close();
  port.close();
}
