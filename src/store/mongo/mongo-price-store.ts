import { type AnyBulkWriteOperation, ObjectId } from "mongodb";
import { newId } from "../ids.js";
import { customPriceRecord, repriceJobRecord } from "../price-records.js";
import type { CustomPriceInput, PriceStore, RepriceJobRecord } from "../price-store.js";
import { mongoScopeCounting } from "./mongo-scope-counters.js";
import type { CustomPriceDoc, MongoCollections, RepriceJobDoc } from "./mongo-collections.js";
import type { TraceDoc } from "./mongo-trace-doc.js";

const toRecord = (doc: CustomPriceDoc) => customPriceRecord({ ...doc, id: doc._id });
const toJobRecord = (doc: RepriceJobDoc) => repriceJobRecord({ ...doc, id: doc._id });

const priceFields = (input: CustomPriceInput) => ({
  provider: input.provider,
  matchKind: input.matchKind,
  pattern: input.pattern,
  price: input.price,
  ...(input.effectiveFrom ? { effectiveFrom: input.effectiveFrom } : {}),
  ...(input.effectiveUntil ? { effectiveUntil: input.effectiveUntil } : {}),
});

/**
 * MongoDB's custom prices and re-price jobs. MongoDB keeps no roll-ups (reads sum the traces), so
 * re-pricing changes the traces alone. A batch's updates and its job's cursor are not one
 * transaction: after a crash the batch is re-priced again, which changes nothing it changed before.
 */
export function mongoPriceStore(c: MongoCollections): PriceStore {
  const scopeCells = mongoScopeCounting(c, 30_000);
  const saveJob = async (job: RepriceJobRecord): Promise<RepriceJobRecord> => {
    const updated = { ...job, updatedAt: new Date() };
    const { state, done, changed, cursor, error, updatedAt } = updated;
    await c.repriceJobs.updateOne({ _id: job.id }, { $set: { state, done, changed, cursor, error, updatedAt } });
    return updated;
  };
  const inRange = (job: RepriceJobRecord) => ({ "meta.accountId": job.projectId, receivedAt: { $gte: job.from, $lt: job.until } });

  return {
    async listPrices(projectId) {
      return (await c.customPrices.find({ accountId: projectId }).sort({ createdAt: 1, _id: 1 }).toArray()).map(toRecord);
    },
    async createPrice(projectId, input) {
      const now = new Date();
      const doc: CustomPriceDoc = { _id: newId("prc"), accountId: projectId, ...priceFields(input), createdAt: now, updatedAt: now };
      await c.customPrices.insertOne(doc);
      return toRecord(doc);
    },
    async updatePrice(projectId, id, input) {
      const existing = await c.customPrices.findOne({ _id: id, accountId: projectId });
      if (!existing) return undefined;
      const doc: CustomPriceDoc = { _id: id, accountId: projectId, ...priceFields(input), createdAt: existing.createdAt, updatedAt: new Date() };
      const { matchedCount } = await c.customPrices.replaceOne({ _id: id, accountId: projectId }, doc);
      return matchedCount === 0 ? undefined : toRecord(doc);
    },
    async deletePrice(projectId, id) {
      return (await c.customPrices.deleteOne({ _id: id, accountId: projectId })).deletedCount > 0;
    },
    async createRepriceJob(projectId, { from, until }) {
      const now = new Date();
      const total = await c.traces.countDocuments({ "meta.accountId": projectId, receivedAt: { $gte: from, $lt: until } });
      const doc: RepriceJobDoc = { _id: newId("rpj"), accountId: projectId, from, until, state: "running", total, done: 0, changed: 0, cursor: "", error: "", createdAt: now, updatedAt: now };
      await c.repriceJobs.insertOne(doc);
      return toJobRecord(doc);
    },
    async getRepriceJob(projectId, id) {
      const doc = await c.repriceJobs.findOne({ _id: id, accountId: projectId });
      return doc ? toJobRecord(doc) : undefined;
    },
    async runningRepriceJobs() {
      return (await c.repriceJobs.find({ state: "running" }).sort({ createdAt: 1 }).toArray()).map(toJobRecord);
    },
    async repriceBatch(job, reprice, limit) {
      // Receive order, then id: a cursor of (receivedAt, _id) resumes exactly after the last trace seen.
      const [at, id] = job.cursor === "" ? [undefined, undefined] : job.cursor.split(":");
      const after =
        at === undefined
          ? {}
          : { $or: [{ receivedAt: { $gt: new Date(Number(at)) } }, { receivedAt: new Date(Number(at)), _id: { $gt: new ObjectId(id) } }] };
      const docs = await c.traces
        .find({ ...inRange(job), ...after })
        .sort({ receivedAt: 1, _id: 1 })
        .limit(limit)
        .toArray();
      const updates: AnyBulkWriteOperation<TraceDoc>[] = [];
      const oldDocs: TraceDoc[] = [];
      const newDocs: TraceDoc[] = [];
      for (const d of docs) {
        const next = reprice({
          receivedAt: d.receivedAt,
          provider: d.meta.provider,
          model: d.meta.model,
          source: d.source ?? 0,
          costUsd: d.costUsd,
          serverCostUsd: d.serverCostUsd ?? undefined,
          priceCheck: d.priceCheck ?? 0,
          tokensIn: d.tokensIn,
          tokensOut: d.tokensOut,
          tokensCachedIn: d.tokensCachedIn ?? undefined,
          tokensCacheWrite: d.tokensCacheWrite ?? undefined,
          tokensCacheWrite1h: d.tokensCacheWrite1h ?? undefined,
          tokensAudioIn: d.tokensAudioIn ?? undefined,
          tokensAudioOut: d.tokensAudioOut ?? undefined,
          webSearchRequests: d.webSearchRequests ?? undefined,
          serviceTier: d.serviceTier ?? undefined,
        });
        if (next.costUsd === d.costUsd && next.serverCostUsd === (d.serverCostUsd ?? undefined) && next.priceCheck === (d.priceCheck ?? 0)) continue;
        // As traceToDoc writes them: an absent server cost and a price check of 0 are left out.
        const set: Partial<TraceDoc> = { costUsd: next.costUsd };
        const unset: Partial<Record<keyof TraceDoc, "">> = {};
        if (next.serverCostUsd === undefined) unset.serverCostUsd = "";
        else set.serverCostUsd = next.serverCostUsd;
        if (next.priceCheck === 0) unset.priceCheck = "";
        else set.priceCheck = next.priceCheck;
        // updateMany by _id: a time-series collection takes only multi-document updates.
        updates.push({ updateMany: { filter: { _id: d._id }, update: { $set: set, ...(Object.keys(unset).length ? { $unset: unset } : {}) } } });
        oldDocs.push(d);
        newDocs.push({ ...d, costUsd: next.costUsd, priceCheck: next.priceCheck });
      }
      if (updates.length > 0) {
        await c.traces.bulkWrite(updates, { ordered: false });
        // The alert scopes' cells follow the new cost, as the embedded store's roll-ups do.
        await scopeCells(oldDocs, -1);
        await scopeCells(newDocs, 1);
      }
      const last = docs.at(-1);
      return saveJob({
        ...job,
        done: job.done + docs.length,
        changed: job.changed + updates.length,
        cursor: last ? `${last.receivedAt.getTime()}:${last._id.toHexString()}` : job.cursor,
        state: docs.length < limit ? "done" : "running",
      });
    },
    async failRepriceJob(job, error) {
      await saveJob({ ...job, state: "failed", error });
    },
  };
}
