import { setTimeout as sleep } from "node:timers/promises";
import { MongoServerError, type AnyBulkWriteOperation } from "mongodb";
import { PriceCheck } from "../../../gen/calltrace/v1/trace_pb.js";
import { type CountedCall, keepMinuteMs, keepQuarterMs, minuteMs, quarterMs, type ScopeCell, type ScopeCounters } from "../scope-counters.js";
import { type ScopeTally, tallyScopeCells } from "../scope-tally.js";
import type { MongoCollections, ScopeCellDoc, ScopeLatencyDoc } from "./mongo-collections.js";
import { sendIncrements } from "./mongo-trace-counts.js";
import type { TraceDoc } from "./mongo-trace-doc.js";

/**
 * How far ahead of its creation a watch starts. Without transactions, a batch being written
 * when the watch is made may not see it: the writers count only traces received from `since`,
 * and read the watches at most `watchCacheMs` old, so every trace received from then on is
 * counted by a writer that sees the watch; the traces received before are back-filled once
 * `since` is `watchGraceMs` past, by when their batches have committed.
 */
export const watchGraceMs = 3000;
const watchCacheMs = 1000;

/** When a trace arrived (its call time, receivedAt, may be earlier: D58). */
const arrivedMs = (doc: TraceDoc) => (doc.arrivedAt ?? doc.receivedAt).getTime();

function countedCall(doc: TraceDoc): CountedCall {
  return {
    keyId: doc.meta.keyId,
    model: doc.meta.model,
    status: doc.meta.status,
    costUsd: doc.costUsd,
    latencyMs: doc.latencyMs,
    unpriced: doc.priceCheck === PriceCheck.UNPRICED,
    userId: doc.userId ?? undefined,
    environment: doc.environment ?? undefined,
    tags: doc.tags ?? [],
    metadata: (doc.metadata ?? []).map(({ k, v }) => [k, v] as const),
  };
}

/** A tally as bulk updates: $inc into this writer's documents, or $set into the back-fill's. */
function cellUpdates(c: MongoCollections, accountId: string, tally: ScopeTally, sign: 1 | -1 | "set") {
  const owner = sign === "set" ? "backfill" : c.writerId;
  const write = <T extends { calls: number }>(id: string, fields: object, sums: T) =>
    sign === "set"
      ? { updateOne: { filter: { _id: id }, update: { $set: { accountId, ...fields, ...sums } }, upsert: true } }
      : {
          updateOne: {
            filter: { _id: id },
            update: { $inc: Object.fromEntries(Object.entries(sums).map(([k, v]) => [k, sign * (v as number)])), $setOnInsert: { accountId, ...fields } },
            upsert: true,
          },
        };
  const cells = tally.cells.map(({ scope, resolution, start, calls, errors, costUsd, unpriced }) =>
    write(`${accountId}|${scope}|${resolution}|${start}|${owner}`, { scope, resolution, start }, { calls, errors, costUsd, unpriced }),
  ) as AnyBulkWriteOperation<ScopeCellDoc>[];
  const latency = tally.latency.map(({ scope, start, bucket, calls }) =>
    write(`${accountId}|${scope}|${start}|${bucket}|${owner}`, { scope, start, bucket }, { calls }),
  ) as AnyBulkWriteOperation<ScopeLatencyDoc>[];
  return { cells, latency };
}

/**
 * The writer's side: adds (or, for traces surely not inserted, takes back) a batch's traces to
 * the cells of the scopes their projects watch, beside the monthly trace counts and in the same
 * way (documents of this writer's own, mongo-trace-counts.ts).
 */
export function mongoScopeCounting(c: MongoCollections, timeoutMs: number) {
  const cache = new Map<string, { readAt: number; since: Map<string, number> }>();
  const watchesOf = async (accountId: string): Promise<Map<string, number>> => {
    const cached = cache.get(accountId);
    if (cached && Date.now() - cached.readAt < watchCacheMs) return cached.since;
    const readAt = Date.now();
    const docs = await c.scopeWatches.find({ accountId }, { timeoutMS: timeoutMs }).toArray();
    const since = new Map(docs.map((d) => [d.scope, d.since.getTime()]));
    cache.set(accountId, { readAt, since });
    return since;
  };
  return async (docs: TraceDoc[], sign: 1 | -1): Promise<void> => {
    const byAccount = new Map<string, TraceDoc[]>();
    for (const doc of docs) {
      const list = byAccount.get(doc.meta.accountId);
      if (list) list.push(doc);
      else byAccount.set(doc.meta.accountId, [doc]);
    }
    const cells: AnyBulkWriteOperation<ScopeCellDoc>[] = [];
    const latency: AnyBulkWriteOperation<ScopeLatencyDoc>[] = [];
    for (const [accountId, list] of byAccount) {
      const since = await watchesOf(accountId);
      if (since.size === 0) continue;
      // A watch counts the traces that arrived from its start; each is placed at its call time.
      const calls = list.map((doc) => ({ atMs: doc.receivedAt.getTime(), arrivedMs: arrivedMs(doc), call: countedCall(doc) }));
      const updates = cellUpdates(
        c,
        accountId,
        tallyScopeCells(calls, (scope, x) => (since.get(scope) ?? Infinity) <= x.arrivedMs),
        sign,
      );
      cells.push(...updates.cells);
      latency.push(...updates.latency);
    }
    if (cells.length === 0) return;
    await sendIncrements(c, () =>
      Promise.all([
        c.scopeCells.bulkWrite(cells, { ordered: false, timeoutMS: timeoutMs }),
        latency.length > 0 ? c.scopeLatency.bulkWrite(latency, { ordered: false, timeoutMS: timeoutMs }) : undefined,
      ]),
    );
  };
}

/** The reading side, and watches with their back-fill. */
export function mongoScopeCounters(c: MongoCollections, now: () => number = Date.now): ScopeCounters {
  const backfill = async (accountId: string, scopes: Map<string, number>) => {
    const latest = Math.max(...scopes.values());
    const wait = latest + watchGraceMs - now();
    if (wait > 0) await sleep(wait);
    const at = now();
    const earliest = Math.min(...scopes.values());
    // Placed within the keep (by call time), arrived before the latest watch's start.
    const traces = c.traces.find({ "meta.accountId": accountId, receivedAt: { $gte: new Date(earliest - keepQuarterMs) } });
    const calls: { atMs: number; call: CountedCall; arrivedMs: number }[] = [];
    for await (const doc of traces) if (arrivedMs(doc) < latest) calls.push({ atMs: doc.receivedAt.getTime(), arrivedMs: arrivedMs(doc), call: countedCall(doc) });
    // Each scope gets the traces that arrived before its own start.
    for (const [scope, since] of scopes) {
      const tally = tallyScopeCells(calls, (s, x) => s === scope && x.arrivedMs < since, at);
      const updates = cellUpdates(c, accountId, tally, "set");
      if (updates.cells.length > 0) await c.scopeCells.bulkWrite(updates.cells, { ordered: false });
      if (updates.latency.length > 0) await c.scopeLatency.bulkWrite(updates.latency, { ordered: false });
    }
    await c.scopeWatches.updateMany({ _id: { $in: [...scopes.keys()].map((s) => `${accountId}|${s}`) } }, { $set: { backfilledAt: new Date(at) } });
  };

  return {
    async watch(accountId, scopes) {
      const unique = [...new Set(scopes)];
      if (unique.length === 0) return;
      const since = new Date(now() + watchGraceMs);
      await Promise.all(
        unique.map((scope) =>
          c.scopeWatches.updateOne({ _id: `${accountId}|${scope}` }, { $setOnInsert: { accountId, scope, since } }, { upsert: true }).catch((error: unknown) => {
            // Another instance made it at the same moment (FerretDB answers a duplicate key).
            if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
          }),
        ),
      );
      const docs = await c.scopeWatches.find({ _id: { $in: unique.map((s) => `${accountId}|${s}`) } }).toArray();
      const pending = new Map(docs.filter((d) => !d.backfilledAt).map((d) => [d.scope, d.since.getTime()]));
      if (pending.size > 0) await backfill(accountId, pending);
    },
    async cells(accountId, scope, resolution, fromMs, toMs) {
      const sums = new Map<number, ScopeCell>();
      for (const doc of await c.scopeCells.find({ accountId, scope, resolution, start: { $gte: fromMs, $lt: toMs } }).toArray()) {
        const cell = sums.get(doc.start);
        if (!cell) sums.set(doc.start, { start: doc.start, calls: doc.calls, errors: doc.errors, costUsd: doc.costUsd, unpriced: doc.unpriced });
        else {
          cell.calls += doc.calls;
          cell.errors += doc.errors;
          cell.costUsd += doc.costUsd;
          cell.unpriced += doc.unpriced;
        }
      }
      return [...sums.values()];
    },
    async latency(accountId, scope, fromMs, toMs) {
      const sums = new Map<string, { start: number; bucket: number; calls: number }>();
      for (const doc of await c.scopeLatency.find({ accountId, scope, start: { $gte: fromMs, $lt: toMs } }).toArray()) {
        const id = `${doc.start} ${doc.bucket}`;
        const cell = sums.get(id);
        if (cell) cell.calls += doc.calls;
        else sums.set(id, { start: doc.start, bucket: doc.bucket, calls: doc.calls });
      }
      return [...sums.values()];
    },
    async prune(nowMs, keep) {
      await c.scopeCells.deleteMany({ resolution: quarterMs, start: { $lt: nowMs - keepQuarterMs } });
      await c.scopeCells.deleteMany({ resolution: minuteMs, start: { $lt: nowMs - keepMinuteMs } });
      await c.scopeLatency.deleteMany({ start: { $lt: nowMs - keepMinuteMs } });
      for (const watch of await c.scopeWatches.find({}).toArray()) {
        if (keep.get(watch.accountId)?.has(watch.scope)) continue;
        await c.scopeWatches.deleteOne({ _id: watch._id });
        await c.scopeCells.deleteMany({ accountId: watch.accountId, scope: watch.scope });
        await c.scopeLatency.deleteMany({ accountId: watch.accountId, scope: watch.scope });
      }
    },
  };
}
