import type { AnyBulkWriteOperation } from "mongodb";
import type { MongoCollections, TraceCountDoc } from "./mongo-collections.js";
import type { TraceDoc } from "./mongo-trace-doc.js";

/** The counter of a key's traces received in the UTC month of `at`: `<key id>:<YYYY-MM>`. */
const counterId = (keyId: string, at: Date) => `${keyId}:${at.toISOString().slice(0, 7)}`;

/**
 * Adds `sign` × the documents of each key and month to their counters (upserted). The writer adds
 * before inserting and takes back only what surely was not inserted, so a counter is never below
 * the truth; after an insert of unknown outcome (a timeout, a dropped connection) it stays above
 * it by the documents that did not land, until the month ends (docs/mongodb.md).
 */
export async function addTraceCounts(c: MongoCollections, docs: TraceDoc[], sign: 1 | -1, timeoutMs: number): Promise<void> {
  const counts = new Map<string, { accountId: string; n: number }>();
  for (const doc of docs) {
    // Counted in the month the trace arrived, wherever its call time places it (D58).
    const id = counterId(doc.meta.keyId, doc.arrivedAt ?? doc.receivedAt);
    const entry = counts.get(id);
    if (entry) entry.n += 1;
    else counts.set(id, { accountId: doc.meta.accountId, n: 1 });
  }
  if (counts.size === 0) return;
  // Each instance counts in documents of its own, which the rebuild adds up: where concurrent
  // $inc overwrite each other (FerretDB), two instances counting in one document lost counts
  // (1,056 of 1,900 traces from two service processes). The account is kept so that deleting an
  // account deletes its counters (mongo-user-store.ts).
  const updates: AnyBulkWriteOperation<TraceCountDoc>[] = [...counts].map(([counter, { accountId, n }]) => ({
    updateOne: {
      filter: { _id: `${counter}:${c.writerId}` },
      update: { $inc: { count: sign * n }, $setOnInsert: { accountId, counter } },
      upsert: true,
    },
  }));
  await sendIncrements(c, () => c.traceCounts.bulkWrite(updates, { ordered: false, timeoutMS: timeoutMs }));
}

/**
 * Sends $inc updates to this writer's own documents: at once where the server counts concurrent
 * $inc, else one send at a time in this process, after the ones before it whatever became of
 * them (a server whose concurrent $inc overwrite each other would otherwise lose counts, and the
 * quota admit past its plan after a restart). Shared by every counter the writers keep.
 */
export async function sendIncrements(c: MongoCollections, send: () => Promise<unknown>): Promise<void> {
  if (c.capabilities.atomicIncrements) {
    await send();
    return;
  }
  const sent = (inOrder.get(c) ?? Promise.resolve()).then(send, send);
  inOrder.set(c, sent.catch(() => {}));
  await sent;
}

/** The last count update sent per database, where updates must go one at a time. */
const inOrder = new WeakMap<MongoCollections, Promise<unknown>>();

/**
 * A key's traces received since `monthStart` (the start of a UTC month), read from its counters
 * (one per store instance that wrote the key's traces that month): an indexed read however many
 * traces there are, where counting them took FerretDB 50 s at 100k.
 * For a month in which counting began (an upgrade), the traces before that are counted from
 * the traces themselves, once per rebuild of the quota's counter.
 */
export function mongoMonthlyTraceCount(c: MongoCollections, timeoutMs: number) {
  return async (key: { id: string; accountId: string }, monthStart: Date): Promise<number> => {
    const id = counterId(key.id, monthStart);
    // The instances' documents, and the one every instance shared before they had their own.
    const counters = await c.traceCounts.find({ $or: [{ counter: id }, { _id: id }] }, { timeoutMS: timeoutMs, projection: { count: 1 } }).toArray();
    let count = counters.reduce((sum, doc) => sum + doc.count, 0);
    if (c.countingSince > monthStart) {
      count += await c.traces.countDocuments(
        { "meta.accountId": key.accountId, "meta.keyId": key.id, receivedAt: { $gte: monthStart, $lt: c.countingSince } },
        { timeoutMS: timeoutMs },
      );
    }
    return count;
  };
}
