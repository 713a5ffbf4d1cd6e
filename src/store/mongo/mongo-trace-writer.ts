import { timestampMs } from "@bufbuild/protobuf/wkt";
import { MongoBulkWriteError, ObjectId, type AnyBulkWriteOperation, type WriteError } from "mongodb";
import type { TraceWrite, WriteOutcome } from "../trace-store.js";
import type { KeyDoc, MongoCollections } from "./mongo-collections.js";
import { traceToDoc, type TraceDoc } from "./mongo-trace-doc.js";
import { addTraceCounts } from "./mongo-trace-counts.js";

export interface MongoTraceWriterOptions {
  /** How long an Idempotency-Key is remembered (D14). */
  idempotencyWindowMs: number;
  /**
   * A claim younger than this whose trace is not (yet) stored may still be being written by an
   * earlier attempt: a repeat then gets a failure (503, retry later) rather than a second copy.
   */
  inFlightMs: number;
  /** Bound on one insert (the driver's timeoutMS). */
  timeoutMs: number;
}

const stored: WriteOutcome = { kind: "stored" };
const failed = (message: string): WriteOutcome => ({ kind: "failed", error: new Error(message) });

/**
 * Group commit on MongoDB (D13): one unordered insertMany per batch under a majority, journaled
 * write concern. Without transactions (FerretDB has none, and time-series collections take no
 * unique index), Idempotency-Keys (D14) are claimed first in their own collection, whose _id is
 * unique; a repeated claim is a duplicate only when the trace it names is really stored, so a
 * crash between claim and insert never turns a retry into a 202 for a lost trace.
 */
export function mongoTraceWriter(c: MongoCollections, options: MongoTraceWriterOptions) {
  /** Claims the keys of `claims`; answers the outcome of each claim that must not be inserted. */
  async function claim(
    claims: Claim[],
    now: Date,
    takenOver: Map<number, ObjectId>,
  ): Promise<Map<number, WriteOutcome>> {
    const refused = new Map<number, WriteOutcome>();
    const conflicts: typeof claims = [];
    try {
      await c.idempotency.insertMany(
        claims.map(({ _id, traceId, quotaRemaining }) => ({ _id, traceId, createdAt: now, ...remembered(quotaRemaining) })),
        { ordered: false, timeoutMS: options.timeoutMs },
      );
    } catch (error) {
      const writeErrors = perDocumentErrors(error, claims.length);
      if (!writeErrors) throw error;
      for (const writeError of writeErrors) {
        const entry = claims[writeError.index]!;
        if (writeError.code === 11000) conflicts.push(entry);
        else refused.set(entry.index, failed(writeError.errmsg ?? "claim failed"));
      }
    }
    if (conflicts.length === 0) return refused;

    // Point lookups by _id alone, one per conflict. FerretDB 1.24 (SQLite) pushes a filter down to
    // SQL only when it is exactly {_id: <value>}; an $in, or _id with any other condition, is
    // filtered in FerretDB after reading every document (2-3 s at 100k traces). Even pushed down
    // it scans (its WHERE on `_ferretdb_sjson->'$._id'` is not its index's expression
    // `_ferretdb_sjson->"_id"`), 0.2 s at 100k; MongoDB answers from the _id index.
    const lookup = { timeoutMS: options.timeoutMs };
    const earlier = await Promise.all(conflicts.map((x) => c.idempotency.findOne({ _id: x._id }, lookup)));
    const existing = new Map(earlier.flatMap((d) => (d ? [[d._id, d] as const] : [])));
    const claimed = [...existing.values()];
    const traces = await Promise.all(
      claimed.map((d) => c.traces.findOne({ _id: d.traceId }, { ...lookup, projection: { _id: 1, receivedAt: 1 } })),
    );
    const storedIds = new Set(
      claimed.flatMap((d, k) => {
        const t = traces[k];
        // The trace was received before its claim was made, within the time a write may wait.
        const ms = t?.receivedAt.getTime() ?? Number.NaN;
        return ms <= d.createdAt.getTime() && ms >= d.createdAt.getTime() - 10 * options.inFlightMs ? [d.traceId.toHexString()] : [];
      }),
    );
    for (const entry of conflicts) {
      const previous = existing.get(entry._id);
      const age = previous ? now.getTime() - previous.createdAt.getTime() : Infinity;
      if (previous && age < options.idempotencyWindowMs && storedIds.has(previous.traceId.toHexString())) {
        refused.set(entry.index, { kind: "duplicate", quotaRemaining: previous.quotaRemaining });
        continue;
      }
      if (previous && age < options.inFlightMs) {
        refused.set(entry.index, failed("an earlier attempt with this Idempotency-Key is still being written"));
        continue;
      }
      // Expired, or left by an attempt that never stored its trace: take it over, unless another
      // writer just did. The trace keeps the earlier attempt's id, so that if that attempt's
      // insert still lands, the two are one document where _id is unique (ordinary collections).
      const filter = previous ? { _id: entry._id, traceId: previous.traceId } : { _id: entry._id };
      const traceId = previous && age < options.idempotencyWindowMs ? previous.traceId : entry.traceId;
      const taken = await c.idempotency
        .updateOne(
          filter,
          // A claim taken over gives the answer to come: its figure replaces the earlier attempt's.
          entry.quotaRemaining === undefined
            ? { $set: { traceId, createdAt: now }, $unset: { quotaRemaining: "" } }
            : { $set: { traceId, createdAt: now, quotaRemaining: entry.quotaRemaining } },
          { upsert: !previous, timeoutMS: options.timeoutMs },
        )
        .then((r) => r.modifiedCount + r.upsertedCount === 1, () => false);
      if (!taken) refused.set(entry.index, failed("another attempt with this Idempotency-Key is being written"));
      else takenOver.set(entry.index, traceId);
    }
    return refused;
  }

  return async function writeBatch(writes: TraceWrite[]): Promise<WriteOutcome[]> {
    const now = new Date();
    const docs: TraceDoc[] = writes.map((w) => traceToDoc(w.trace, new ObjectId()));
    const outcomes: (WriteOutcome | undefined)[] = new Array(writes.length);

    // A key repeated within the batch answers as its first occurrence does.
    const firstWithKey = new Map<string, number>();
    const repeats = new Map<number, number>();
    const claims: Claim[] = [];
    writes.forEach((w, index) => {
      if (w.idempotencyKey === undefined) return;
      const id = `${w.trace.keyId}:${w.idempotencyKey}`;
      const first = firstWithKey.get(id);
      if (first !== undefined) repeats.set(index, first);
      else {
        firstWithKey.set(id, index);
        claims.push({ index, _id: id, traceId: docs[index]!._id, quotaRemaining: w.quotaRemaining });
      }
    });
    const takenOver = new Map<number, ObjectId>();
    if (claims.length > 0) for (const [index, outcome] of await claim(claims, now, takenOver)) outcomes[index] = outcome;
    for (const [index, traceId] of takenOver) docs[index]!._id = traceId;

    const toInsert = docs.map((_, i) => i).filter((i) => outcomes[i] === undefined && !repeats.has(i));
    /** Gives up the claims of writes that surely were not stored, so a retry may claim them at once. */
    const release = async () => {
      const released = claims.filter((x) => outcomes[x.index]?.kind === "failed");
      if (released.length === 0) return;
      const filters = released.map((x) => ({ _id: x._id, traceId: docs[x.index]!._id }));
      await c.idempotency.deleteMany({ $or: filters }, { timeoutMS: options.timeoutMs }).catch(() => {});
    };
    if (toInsert.length > 0) {
      const inserting = toInsert.map((i) => docs[i]!);
      try {
        // Counted before the insert, so the monthly counts are never below the truth.
        await addTraceCounts(c, inserting, 1, options.timeoutMs);
      } catch (error) {
        for (const i of toInsert) outcomes[i] = failed(`the trace could not be counted: ${(error as Error).message}`);
        await release();
      }
      if (outcomes[toInsert[0]!] === undefined) {
        try {
          await c.traces.insertMany(inserting, { ordered: false, timeoutMS: options.timeoutMs });
          for (const i of toInsert) outcomes[i] = stored;
        } catch (error) {
          // Per-document errors fail only their own writes; otherwise which documents were
          // inserted is unknown, and every write of the batch fails (a 503 for a stored trace is
          // allowed; a 202 for a lost one is not).
          const writeErrors = perDocumentErrors(error, toInsert.length);
          const bad = new Map<number, { message: string; code: unknown }>();
          for (const e of writeErrors ?? []) bad.set(e.index, { message: e.errmsg ?? "insert failed", code: e.code });
          toInsert.forEach((i, k) => {
            const problem = bad.get(k);
            // A duplicate _id is a taken-over claim whose earlier attempt landed after all: stored.
            if (writeErrors && (!problem || (problem.code === 11000 && takenOver.has(i)))) outcomes[i] = stored;
            else outcomes[i] = failed(problem?.message ?? (error as Error).message);
          });
          // The documents surely not inserted are taken off the counts (best effort: a count
          // left above the truth only holds the key back). After an unknown outcome nothing is.
          const notInserted = [...bad.keys()].map((k) => inserting[k]!);
          await addTraceCounts(c, notInserted, -1, options.timeoutMs).catch(() => {});
          // Claims whose insert surely failed are given up. After an unknown outcome (a timeout,
          // a dropped connection) the insert may still land: its claim stays, and a retry is
          // answered by reading whether the trace is there (or after inFlightMs takes the claim
          // over with the same trace id). Releasing it here let a frozen server apply both the
          // insert and the release, and the retry store the trace again.
          if (writeErrors) await release();
        }
      }
    }
    for (const [index, first] of repeats) {
      const answer = outcomes[first]!;
      outcomes[index] = answer.kind === "stored" ? { kind: "duplicate", quotaRemaining: writes[first]!.quotaRemaining } : answer;
    }

    await touchKeys(c, writes, outcomes as WriteOutcome[], options.timeoutMs);
    return outcomes as WriteOutcome[];
  };
}

/** One Idempotency-Key to claim for the write at `index` of the batch. */
interface Claim {
  index: number;
  _id: string;
  traceId: ObjectId;
  quotaRemaining: number | undefined;
}

/** The claim document's field for a figure to remember: none when there is no figure. */
const remembered = (quotaRemaining: number | undefined) => (quotaRemaining === undefined ? {} : { quotaRemaining });

/** Records each key's latest use; best effort, as it is only shown in `keys list`. */
async function touchKeys(c: MongoCollections, writes: TraceWrite[], outcomes: WriteOutcome[], timeoutMs: number): Promise<void> {
  const lastUse = new Map<string, number>();
  writes.forEach((w, i) => {
    if (outcomes[i]!.kind !== "stored") return;
    lastUse.set(w.trace.keyId, Math.max(lastUse.get(w.trace.keyId) ?? 0, timestampMs(w.trace.receivedAt!)));
  });
  if (lastUse.size === 0) return;
  const updates: AnyBulkWriteOperation<KeyDoc>[] = [...lastUse].map(([id, at]) => ({
    updateOne: { filter: { _id: id }, update: { $max: { lastUsedAt: new Date(at) } } },
  }));
  await c.keys.bulkWrite(updates, { ordered: false, timeoutMS: timeoutMs, writeConcern: { w: 1 } }).catch(() => {});
}

/**
 * The per-document errors of an unordered insertMany when the server answered for every
 * document (those without an error were inserted, durably); undefined when it did not: a dropped
 * connection, a timeout or an unconfirmed write concern, after which nobody knows which documents
 * are in. The driver wraps those in a MongoBulkWriteError too, with no write errors, so "no write
 * errors" alone does not mean "all inserted".
 */
function perDocumentErrors(error: unknown, documents: number): WriteError[] | undefined {
  if (!(error instanceof MongoBulkWriteError) || error.writeConcernError) return undefined;
  const writeErrors = [error.writeErrors].flat();
  return error.insertedCount + writeErrors.length === documents ? writeErrors : undefined;
}
