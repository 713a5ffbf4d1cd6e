import { timestampMs } from "@bufbuild/protobuf/wkt";
import { MongoBulkWriteError, ObjectId, type AnyBulkWriteOperation, type WriteError } from "mongodb";
import { TraceSource } from "../../../gen/calltrace/v1/trace_pb.js";
import type { TraceWrite, WriteOutcome } from "../trace-store.js";
import type { IdempotencyDoc, KeyDoc, MongoCollections } from "./mongo-collections.js";
import { mongoClaimReads } from "./mongo-claim-reads.js";
import { mongoOtlpSpans } from "./mongo-otlp-spans.js";
import { traceToDoc, type TraceDoc } from "./mongo-trace-doc.js";
import { mongoScopeCounting } from "./mongo-scope-counters.js";
import { addTraceCounts } from "./mongo-trace-counts.js";
import { mongoValueBound } from "./mongo-value-bound.js";

export interface MongoTraceWriterOptions {
  /** How long an Idempotency-Key is remembered (D14). */
  idempotencyWindowMs: number;
  /**
   * Time-series collections only (no unique trace _id): a claim younger than this whose trace is
   * not (yet) stored may still be being written by an earlier attempt, so a repeat then gets a
   * failure (503, retry later) rather than a second copy.
   */
  inFlightMs: number;
  /** Bound on one insert (the driver's timeoutMS). */
  timeoutMs: number;
  /**
   * Longest a batch waits for the reads of earlier claims its repeated Idempotency-Keys need;
   * past it those writes fail (503, retry later) and the rest of the batch goes on. The reads go
   * on too, and answer the retries (mongo-claim-reads.ts).
   */
  claimReadWaitMs: number;
  /** Values tracked per project, dimension and UTC day (D54); 0 tracks all. */
  groupValuesPerDay: number;
}

const stored: WriteOutcome = { kind: "stored" };
const failed = (message: string): WriteOutcome => ({ kind: "failed", error: new Error(message) });

/**
 * Group commit on MongoDB (D13): one unordered insertMany per batch under a majority, journaled
 * write concern. Without transactions (FerretDB has none, and time-series collections take no
 * unique index), Idempotency-Keys (D14) are claimed first in their own collection, whose _id is
 * unique, naming the trace id they were claimed for. A fresh key costs nothing more than its
 * claim's insert. A repeated claim is refused by the _id index (E11000, per document), and only
 * then is the earlier claim read; where trace _ids are unique (ordinary collections, FerretDB)
 * the trace is then inserted again under the claim's trace id, and the _id index answers whether
 * it was stored: a duplicate key is a duplicate, an insert is the first copy (its earlier
 * attempt never landed, or lands as the same document). Time-series collections read the trace
 * instead. A crash between claim and insert never turns a retry into a 202 for a lost trace, and
 * a claim is never released while its insert's outcome is unknown.
 */
export function mongoTraceWriter(c: MongoCollections, options: MongoTraceWriterOptions) {
  const uniqueTraceIds = !c.capabilities.timeSeries;
  const addScopeCells = mongoScopeCounting(c, options.timeoutMs);
  const otlpSpans = mongoOtlpSpans(c);
  const markGroups = mongoValueBound(c, options.groupValuesPerDay, options.timeoutMs);
  const earlierClaims = mongoClaimReads(c.idempotency, {
    timeoutMs: 6 * options.timeoutMs,
    concurrency: 2,
    rememberMs: Math.min(10 * 60_000, options.idempotencyWindowMs / 2),
    maxEntries: 10_000,
  });

  /** Sets a claim's trace id, time and figure, if it still names `previous`'s trace. */
  async function takeOver(entry: Claim, previous: IdempotencyDoc, traceId: ObjectId, now: Date): Promise<boolean> {
    // A claim taken over gives the answer to come: its figure replaces the earlier attempt's.
    const stamp = claimedAt(entry, now);
    const update =
      entry.quotaRemaining === undefined
        ? { $set: { traceId, ...stamp }, $unset: { quotaRemaining: "" as const } }
        : { $set: { traceId, ...stamp, quotaRemaining: entry.quotaRemaining } };
    const taken = await c.idempotency
      .updateOne({ _id: entry._id, traceId: previous.traceId }, update, { timeoutMS: options.timeoutMs })
      .then((r) => r.modifiedCount === 1, () => false);
    if (taken) earlierClaims.remember({ _id: entry._id, traceId, ...stamp, ...remembered(entry.quotaRemaining) });
    else earlierClaims.forget(entry._id);
    return taken;
  }

  return async function writeBatch(writes: TraceWrite[]): Promise<WriteOutcome[]> {
    const now = new Date();
    const docs: TraceDoc[] = writes.map((w) => traceToDoc(w.trace, new ObjectId()));
    const outcomes: (WriteOutcome | undefined)[] = new Array(writes.length);

    // A key repeated within the batch answers as its first occurrence does.
    const firstWithKey = new Map<string, number>();
    const repeats = new Map<number, number>();
    const claims = new Map<number, Claim>();
    // An OTLP call stored before, live or imported, however long ago: a duplicate, never claimed again.
    for (const i of await storedOtlpCalls(writes)) outcomes[i] = { kind: "duplicate", quotaRemaining: undefined };
    writes.forEach((w, index) => {
      const id = claimIdOf(w);
      if (id === undefined || outcomes[index] !== undefined) return;
      // An imported trace is claimed for good (docs/import.md).
      const imported = w.importKey !== undefined;
      const first = firstWithKey.get(id);
      if (first !== undefined) repeats.set(index, first);
      else {
        firstWithKey.set(id, index);
        const claim: Claim = { index, _id: id, traceId: docs[index]!._id, quotaRemaining: w.quotaRemaining, accountId: w.trace.accountId };
        claims.set(index, imported ? { ...claim, lasting: true } : claim);
      }
    });

    /** Gives up the claims of writes that surely were not stored, so a retry may claim them at once (time-series only). */
    const release = async (indices: number[]) => {
      if (uniqueTraceIds) return; // a retry's insert under the claim's trace id settles it
      const released = indices.flatMap((i) => (outcomes[i]?.kind === "failed" && claims.has(i) ? [claims.get(i)!] : []));
      if (released.length === 0) return;
      for (const x of released) earlierClaims.forget(x._id);
      const filters = released.map((x) => ({ _id: x._id, traceId: docs[x.index]!._id }));
      await c.idempotency.deleteMany({ $or: filters }, { timeoutMS: options.timeoutMs }).catch(() => {});
    };

    /**
     * Inserts the traces of `indices` and settles their outcomes. `probes` holds the earlier
     * claims whose trace id a retry's trace was given: a duplicate key there means stored before.
     */
    const insert = async (indices: number[], probes: Map<number, IdempotencyDoc>) => {
      if (indices.length === 0) return;
      const inserting = indices.map((i) => docs[i]!);
      try {
        // Counted before the insert, so the monthly counts (and the alert scopes' cells) are never
        // below the truth; the values past the day's bound are marked on the documents to insert.
        await Promise.all([addTraceCounts(c, inserting, 1, options.timeoutMs), addScopeCells(inserting, 1), markGroups(inserting)]);
      } catch (error) {
        for (const i of indices) outcomes[i] = failed(`the trace could not be counted: ${(error as Error).message}`);
        await release(indices);
        return;
      }
      try {
        await c.traces.insertMany(inserting, { ordered: false, timeoutMS: options.timeoutMs });
        for (const i of indices) outcomes[i] = stored;
      } catch (error) {
        // Per-document errors fail only their own writes; otherwise which documents were
        // inserted is unknown, and every write of the batch fails (a 503 for a stored trace is
        // allowed; a 202 for a lost one is not).
        const writeErrors = perDocumentErrors(error, indices.length);
        const bad = new Map<number, { message: string; code: unknown }>();
        for (const e of writeErrors ?? []) bad.set(e.index, { message: e.errmsg ?? "insert failed", code: e.code });
        indices.forEach((i, k) => {
          const problem = bad.get(k);
          const probe = probes.get(i);
          if (!writeErrors) outcomes[i] = failed((error as Error).message);
          else if (!problem) outcomes[i] = stored;
          // A duplicate _id is this claim's trace, stored already: by the earlier attempt a
          // retry's insert probed for, or by a retry that probed while this insert was on its
          // way (which answered first, as it had stored it; this attempt gives its count back).
          else if (problem.code === 11000) outcomes[i] = { kind: "duplicate", quotaRemaining: (probe ?? writes[i]!).quotaRemaining };
          else outcomes[i] = failed(problem.message);
        });
        // The documents surely not inserted are taken off the counts (best effort: a count
        // left above the truth only holds the key back). After an unknown outcome nothing is.
        const notInserted = [...bad.keys()].map((k) => inserting[k]!);
        await Promise.all([addTraceCounts(c, notInserted, -1, options.timeoutMs), addScopeCells(notInserted, -1)]).catch(() => {});
        // Claims whose insert surely failed are given up. After an unknown outcome (a timeout,
        // a dropped connection) the insert may still land: its claim stays, and a retry is
        // answered from it. Releasing it here let a frozen server apply both the insert and the
        // release, and the retry store the trace again.
        if (writeErrors) await release(indices);
      }
      // A retry that stored its trace after all is the first answer: replays answer its figure (D23).
      await Promise.all(
        [...probes].flatMap(([i, probe]) => {
          const quotaRemaining = writes[i]!.quotaRemaining;
          if (outcomes[i] !== stored || probe.quotaRemaining === quotaRemaining) return [];
          earlierClaims.remember({ ...probe, quotaRemaining });
          const update = quotaRemaining === undefined ? { $unset: { quotaRemaining: "" as const } } : { $set: { quotaRemaining } };
          // By _id alone: FerretDB reads any other filter by decoding every claim (the trace id
          // of a claim within its window never changes where trace _ids are unique).
          return [c.idempotency.updateOne({ _id: probe._id }, update, { timeoutMS: options.timeoutMs }).catch(() => {})];
        }),
      );
    };

    /** Settles the writes whose claim was refused: from the earlier claim, read at most claimReadWaitMs. */
    const settleRepeatedClaims = async (conflicts: Claim[]) => {
      if (conflicts.length === 0) return;
      const earlier = new Map<number, IdempotencyDoc | null | undefined>();
      const reads = conflicts.filter((x) => !x.lasting).map((x) => earlierClaims.read(x._id).then((doc) => void earlier.set(x.index, doc)));
      let timer: NodeJS.Timeout | undefined;
      await Promise.all([
        Promise.race([Promise.all(reads), new Promise((resolve) => (timer = setTimeout(resolve, options.claimReadWaitMs)))]),
        readImportClaims(conflicts.filter((x) => x.lasting), earlier),
      ]);
      clearTimeout(timer);

      const probes = new Map<number, IdempotencyDoc>();
      const toInsert: number[] = [];
      await Promise.all(
        conflicts.map(async (entry) => {
          const i = entry.index;
          const previous = earlier.get(i);
          if (!earlier.has(i)) return void (outcomes[i] = failed("the earlier attempt with this Idempotency-Key is still being looked up"));
          if (previous === undefined) return void (outcomes[i] = failed("the earlier attempt with this Idempotency-Key could not be read"));
          if (previous === null) return void (outcomes[i] = failed("the earlier claim of this Idempotency-Key was just given up"));
          const age = now.getTime() - (previous.createdAt ?? previous.importedAt ?? now).getTime();
          if (previous.createdAt !== undefined && age >= options.idempotencyWindowMs) {
            // Expired, not yet deleted: a new claim, with a trace id of its own.
            if (await takeOver(entry, previous, entry.traceId, now)) toInsert.push(i);
            else outcomes[i] = failed("another attempt with this Idempotency-Key is being written");
            return;
          }
          // The trace keeps the earlier attempt's id, so that however many attempts land, they
          // are one document where _id is unique.
          docs[i]!._id = previous.traceId;
          if (uniqueTraceIds) {
            probes.set(i, previous);
            toInsert.push(i);
            return;
          }
          const trace = await c.traces
            .findOne({ _id: previous.traceId }, { timeoutMS: options.timeoutMs, projection: { _id: 1 } })
            .catch(() => undefined);
          if (trace === undefined) outcomes[i] = failed("the earlier attempt with this Idempotency-Key could not be read");
          else if (trace) outcomes[i] = { kind: "duplicate", quotaRemaining: previous.quotaRemaining };
          else if (age < options.inFlightMs) outcomes[i] = failed("an earlier attempt with this Idempotency-Key is still being written");
          // Left by an attempt that never stored its trace: taken over, unless another writer just did.
          else if (await takeOver(entry, previous, previous.traceId, now)) toInsert.push(i);
          else outcomes[i] = failed("another attempt with this Idempotency-Key is being written");
        }),
      );
      await insert(toInsert, probes);
    };

    const conflicts = claims.size > 0 ? await claim([...claims.values()], now, outcomes) : [];
    const repeated = new Set(conflicts.map((x) => x.index));
    const fresh = docs.map((_, i) => i).filter((i) => outcomes[i] === undefined && !repeats.has(i) && !repeated.has(i));
    // The fresh traces do not wait for the reads of earlier claims.
    await Promise.all([insert(fresh, new Map()), settleRepeatedClaims(conflicts)]);

    for (const [index, first] of repeats) {
      const answer = outcomes[first]!;
      outcomes[index] = answer.kind === "stored" ? { kind: "duplicate", quotaRemaining: writes[first]!.quotaRemaining } : answer;
    }

    await touchKeys(c, writes, outcomes as WriteOutcome[], options.timeoutMs);
    return outcomes as WriteOutcome[];
  };

  /**
   * The writes (by index) that are OTLP calls whose span is stored in their project already: an
   * OTLP call's identity is its trace and span ids within its project, live or imported, as the
   * embedded store keeps it (D37, D63). One find per project through the (project, OTLP trace id)
   * index; it also finds calls a claim no longer remembers (claims expire after 24 hours, and
   * those of older releases named the key that sent the call).
   */
  async function storedOtlpCalls(writes: TraceWrite[]): Promise<number[]> {
    const byProject = new Map<string, number[]>();
    writes.forEach((w, i) => {
      if (otlpCallKey(w) === undefined || w.trace.otlpSpanId === "") return;
      const indices = byProject.get(w.trace.accountId);
      if (indices) indices.push(i);
      else byProject.set(w.trace.accountId, [i]);
    });
    const found: number[] = [];
    await Promise.all(
      [...byProject].map(async ([accountId, indices]) => {
        const spans = await otlpSpans(accountId, [...new Set(indices.map((i) => writes[i]!.trace.otlpTraceId))]);
        const stored = new Set(spans.map((s) => `${s.otlpTraceId}:${s.otlpSpanId}`));
        for (const i of indices) if (stored.has(`${writes[i]!.trace.otlpTraceId}:${writes[i]!.trace.otlpSpanId}`)) found.push(i);
      }),
    );
    return found;
  }

  /**
   * Reads the earlier claims of an import's repeated traces (a whole file's, when imported again)
   * in one query: an import waits for them, where a request's retry may not.
   */
  async function readImportClaims(conflicts: Claim[], into: Map<number, IdempotencyDoc | null | undefined>): Promise<void> {
    if (conflicts.length === 0) return;
    const found = await c.idempotency
      .find({ _id: { $in: conflicts.map((x) => x._id) } }, { timeoutMS: 6 * options.timeoutMs })
      .toArray()
      .catch(() => undefined);
    const byId = new Map(found?.map((doc) => [doc._id, doc]));
    for (const x of conflicts) into.set(x.index, found && (byId.get(x._id) ?? null));
  }

  /**
   * Inserts the claims; a claim the server refused for another reason than a duplicate key fails
   * its write. Answers the claims refused as duplicates, which need the earlier claim.
   */
  async function claim(claims: Claim[], now: Date, outcomes: (WriteOutcome | undefined)[]): Promise<Claim[]> {
    const conflicts: Claim[] = [];
    try {
      await c.idempotency.insertMany(
        claims.map((x) => ({ _id: x._id, traceId: x.traceId, ...claimedAt(x, now), ...remembered(x.quotaRemaining) })),
        { ordered: false, timeoutMS: options.timeoutMs },
      );
    } catch (error) {
      const writeErrors = perDocumentErrors(error, claims.length);
      if (!writeErrors) throw error;
      for (const writeError of writeErrors) {
        const entry = claims[writeError.index]!;
        if (writeError.code === 11000) conflicts.push(entry);
        else outcomes[entry.index] = failed(writeError.errmsg ?? "claim failed");
      }
    }
    return conflicts;
  }
}

/** An OTLP call's key (src/otlp/llm-call.ts), live or imported; undefined for any other trace. */
const otlpCallKey = (w: TraceWrite) => (w.trace.source === TraceSource.OTLP ? w.idempotencyKey : undefined);

/**
 * What a write claims in the idempotency collection: an OTLP call its key within its project,
 * whether it arrives live or from a file (so either finds the other's claim); another imported
 * trace its identity in its file; any other write its key id and Idempotency-Key (D14).
 */
function claimIdOf(w: TraceWrite): string | undefined {
  const callKey = otlpCallKey(w);
  if (callKey !== undefined) return `otlp:${w.trace.accountId}:${callKey}`;
  if (w.importKey !== undefined) return `import:${w.trace.accountId}:${w.importKey}`;
  if (w.idempotencyKey !== undefined) return `${w.trace.keyId}:${w.idempotencyKey}`;
  return undefined;
}

/** One Idempotency-Key (or import key) to claim for the write at `index` of the batch. */
interface Claim {
  index: number;
  _id: string;
  traceId: ObjectId;
  quotaRemaining: number | undefined;
  accountId: string;
  /** An import's claim, which never expires. */
  lasting?: true;
}

/** The claim document's time: `createdAt`, which its window and TTL index expire, or an import's `importedAt` with its project. */
const claimedAt = (claim: Claim, now: Date): Pick<IdempotencyDoc, "createdAt" | "importedAt" | "accountId"> =>
  claim.lasting ? { importedAt: now, accountId: claim.accountId } : { createdAt: now };

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
