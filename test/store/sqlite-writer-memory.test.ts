import { join } from "node:path";
import type { Worker } from "node:worker_threads";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { StoredTraceSchema } from "../../gen/calltrace/v1/trace_pb.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { writeToRow } from "../../src/store/sqlite/sqlite-trace-row.js";
import type { CloseRequest, WriteReply, WriteRequest } from "../../src/store/sqlite/sqlite-write-worker.js";
import { startWriterWorker } from "../../src/store/sqlite/sqlite-writer-thread.js";
import { defaultValuesPerDay } from "../../src/store/value-cap.js";
import { tempDir } from "../support/temp-dir.js";

const perRequest = 500;
/** Commits of at most two requests: many commits, each following the last while more are queued. */
const perCommit = 1_000;
const n = 10_000;
/** Requests handed over and not yet answered: as an import's pipeline bounds them (D74), enough that the queue never empties. */
const inFlight = 8;

/** Imported traces: few distinct values, so the writer's caches (value caps, id numbers) stop growing early. */
function request(id: number): WriteRequest {
  const out: WriteRequest = { id, traces: [], idempotencyKeys: [], quotaRemaining: [], now: Date.now() };
  for (let i = 0; i < perRequest; i++) {
    const seq = id * perRequest + i;
    const trace = create(StoredTraceSchema, {
      receivedAt: timestampFromMs(Date.now() - (seq % 1000) * 1000),
      keyId: "key_mem",
      accountId: "prj_mem",
      provider: "openai",
      model: `gpt-${seq % 3}`,
      tokensIn: 100 + (seq % 50),
      tokensOut: 20,
      latencyMs: 200 + (seq % 700),
      costUsd: 0.001,
      status: seq % 17 === 0 ? "error" : "success",
      userId: `user-${seq % 20}`,
      tags: ["import", `t${seq % 4}`],
      metadata: { feature: `f${seq % 5}` },
    });
    const { values, claimKey } = writeToRow({ trace, idempotencyKey: undefined, importKey: `id:mem-${seq}` });
    out.traces.push(values);
    out.idempotencyKeys.push(claimKey);
    out.quotaRemaining.push(null);
  }
  return out;
}

/** The bytes reachable in the worker's heap (a heap snapshot collects garbage first): the sum of its objects' own sizes. */
async function reachableBytes(worker: Worker): Promise<number> {
  const chunks: Buffer[] = [];
  for await (const chunk of await worker.getHeapSnapshot()) chunks.push(chunk as Buffer);
  const { snapshot, nodes } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
    snapshot: { meta: { node_fields: string[] } };
    nodes: number[];
  };
  const fields = snapshot.meta.node_fields.length;
  const selfSize = snapshot.meta.node_fields.indexOf("self_size");
  let bytes = 0;
  for (let i = selfSize; i < nodes.length; i += fields) bytes += nodes[i]!;
  return bytes;
}

/**
 * Imports `traces` through a writer thread whose heap may not pass `heapMb`, a request handed over
 * as each is answered: the writer's queue stays full, as in an import, so each commit follows the
 * last without a pause. Answers the heap reachable after the import.
 */
async function importThroughWriter(traces: number, heapMb: number): Promise<number> {
  const dir = tempDir();
  await openSqliteStore(dir).close();
  const worker = startWriterWorker(
    { file: join(dir, "calltrace.db"), groupValuesPerDay: defaultValuesPerDay, commitTracesMax: perCommit },
    { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: 8 },
  );
  const exited = new Promise<number>((resolve) => worker.once("exit", resolve));
  try {
    const requests = Array.from({ length: traces / perRequest }, (_, id) => request(id));
    let answered = 0;
    // Not all at once: Node 24 delivers every queued message before the first commit, and the
    // requests alone would fill the bounded heap.
    let sent = Math.min(inFlight, requests.length);
    await new Promise<void>((resolve, reject) => {
      worker.on("error", reject);
      void exited.then((code) => reject(new Error(`the writer thread exited (${code}) after ${answered} traces`)));
      worker.on("message", (reply: WriteReply) => {
        if ("error" in reply) return reject(new Error(reply.error));
        answered += perRequest;
        if (answered === traces) resolve();
        else if (sent < requests.length) worker.postMessage(requests[sent++]);
      });
      for (const r of requests.slice(0, sent)) worker.postMessage(r);
    });
    return await reachableBytes(worker);
  } finally {
    worker.postMessage({ close: true } satisfies CloseRequest);
    await exited;
  }
}

describe("the SQLite writer thread's memory under a long import", () => {
  it("keeps no committed batch reachable while its queue never empties (4d77247)", async () => {
    // 4d77247's parent ran each commit inside the last one's stack, keeping every batch reachable
    // until the queue emptied: about 1.5 KB per trace, 90 MB over these 60,000, where the writer
    // needs about 10 MB. Both imports fit the heap's bound, and leave the same heap behind.
    const heapMb = 48;
    const short = await importThroughWriter(n, heapMb);
    const long = await importThroughWriter(6 * n, heapMb);
    expect(long).toBeLessThan(heapMb * 2 ** 20);
    expect(long - short).toBeLessThan(n * 100);
  }, 60_000);
});
