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
    const id = counterId(doc.meta.keyId, doc.receivedAt);
    const entry = counts.get(id);
    if (entry) entry.n += 1;
    else counts.set(id, { accountId: doc.meta.accountId, n: 1 });
  }
  if (counts.size === 0) return;
  // The account is kept so that deleting an account deletes its counters (mongo-user-store.ts).
  const updates: AnyBulkWriteOperation<TraceCountDoc>[] = [...counts].map(([id, { accountId, n }]) => ({
    updateOne: { filter: { _id: id }, update: { $inc: { count: sign * n }, $setOnInsert: { accountId } }, upsert: true },
  }));
  const send = () => c.traceCounts.bulkWrite(updates, { ordered: false, timeoutMS: timeoutMs });
  if (c.capabilities.atomicIncrements) {
    await send();
    return;
  }
  // One at a time in this process, after the ones before it whatever became of them: a server
  // whose concurrent $inc overwrite each other would otherwise lose counts, and the quota admit
  // past its plan after a restart.
  const sent = (inOrder.get(c) ?? Promise.resolve()).then(send, send);
  inOrder.set(c, sent.catch(() => {}));
  await sent;
}

/** The last count update sent per database, where updates must go one at a time. */
const inOrder = new WeakMap<MongoCollections, Promise<unknown>>();

/**
 * A key's traces received since `monthStart` (the start of a UTC month), read from its counter: a
 * point lookup however many traces there are, where counting them took FerretDB 50 s at 100k.
 * For a month in which counting began (an upgrade), the traces before that are counted from
 * the traces themselves, once per rebuild of the quota's counter.
 */
export function mongoMonthlyTraceCount(c: MongoCollections, timeoutMs: number) {
  return async (key: { id: string; accountId: string }, monthStart: Date): Promise<number> => {
    const counter = await c.traceCounts.findOne({ _id: counterId(key.id, monthStart) }, { timeoutMS: timeoutMs });
    let count = counter?.count ?? 0;
    if (c.countingSince > monthStart) {
      count += await c.traces.countDocuments(
        { "meta.accountId": key.accountId, "meta.keyId": key.id, receivedAt: { $gte: monthStart, $lt: c.countingSince } },
        { timeoutMS: timeoutMs },
      );
    }
    return count;
  };
}
