// Runs in a worker thread: owns the write connection, so fsyncs never block the event loop that
// serves requests, and the next batch gathers while this one is being committed.
import { parentPort, workerData } from "node:worker_threads";
import type { TraceWrite } from "../trace-store.js";
import { sqliteBatchCommit } from "./sqlite-batch-commit.js";
import { openSqliteDatabase } from "./sqlite-database.js";

export interface WriteRequest {
  id: number;
  writes: TraceWrite[];
  now: number;
}

const db = openSqliteDatabase((workerData as { file: string }).file);
const commit = sqliteBatchCommit(db);

parentPort!.on("message", ({ id, writes, now }: WriteRequest) => {
  try {
    parentPort!.postMessage({ id, outcomes: commit(writes, now) });
  } catch (error) {
    parentPort!.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
  }
});
