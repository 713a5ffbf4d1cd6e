import { create } from "@bufbuild/protobuf";
import type { Filter } from "mongodb";
import { TracePageSchema } from "../../../gen/calltrace/v1/query_pb.js";
import { clampPageSize, decodeTraceCursor, encodeTraceCursor, InvalidCursorError } from "../trace-cursor.js";
import { resolveTraceFilter, type ResolvedTraceFilter } from "../trace-filter.js";
import type { TraceReader } from "../trace-reader.js";
import { usageReader, type UsageCells, type UsageGroup, type UsageGrouping } from "../usage-reader.js";
import type { MongoCollections } from "./mongo-collections.js";
import { objectIdIds, traceFromDoc, type TraceDoc } from "./mongo-trace-doc.js";

/** The match of one account's traces under a resolved filter. */
export function traceMatch(accountId: string | undefined, filter: Pick<ResolvedTraceFilter, "sinceMs" | "untilMs"> & Partial<ResolvedTraceFilter>): Filter<TraceDoc> {
  return {
    ...(accountId === undefined ? {} : { "meta.accountId": accountId }),
    ...(filter.keyId === undefined ? {} : { "meta.keyId": filter.keyId }),
    ...(filter.provider === undefined ? {} : { "meta.provider": filter.provider }),
    ...(filter.model === undefined ? {} : { "meta.model": filter.model }),
    ...(filter.status === undefined ? {} : { "meta.status": filter.status }),
    receivedAt: { $gte: new Date(filter.sinceMs), $lt: new Date(filter.untilMs) },
  };
}

const sums = {
  calls: { $sum: 1 },
  costUsd: { $sum: "$costUsd" },
  tokensIn: { $sum: "$tokensIn" },
  tokensOut: { $sum: "$tokensOut" },
} as const;

/**
 * The dashboard's reads on MongoDB, with only $match, $group, $sum and $sort (the subset FerretDB
 * has): days and latency buckets are fields of each document, and percentiles are read from
 * bucket counts in usage-reader.ts.
 */
export function mongoTraceReader(c: MongoCollections, retentionMs: number): TraceReader {
  const ids = objectIdIds(c.traceIdKey);
  const cells = async (accountId: string, filter: ResolvedTraceFilter, grouping: UsageGrouping): Promise<UsageCells> => {
    const id = {
      ...(grouping.day ? { day: "$day" } : {}),
      ...(grouping.model ? { provider: "$meta.provider", model: "$meta.model" } : {}),
      ...(grouping.country ? { country: "$country" } : {}),
    };
    const match = { $match: traceMatch(accountId, filter) };
    type Row = { _id: Record<string, unknown> } & Partial<Record<keyof typeof sums, number>>;
    const group = async (groupId: Record<string, string>, accumulators: Record<string, unknown>): Promise<Row[]> => {
      if (c.capabilities.manyAccumulators || Object.keys(accumulators).length === 1) {
        return c.traces.aggregate<Row>([match, { $group: { _id: groupId, ...accumulators } }]).toArray();
      }
      // One accumulator per $group (see MongoCapabilities.manyAccumulators), joined here by group.
      const parts = await Promise.all(
        Object.entries(accumulators).map(([name, sum]) => c.traces.aggregate<Row>([match, { $group: { _id: groupId, [name]: sum } }]).toArray()),
      );
      const joined = new Map<string, Row>();
      for (const row of parts.flat()) {
        const key = JSON.stringify(row._id);
        joined.set(key, { ...joined.get(key), ...row });
      }
      return [...joined.values()];
    };
    const [sumRows, latencyRows] = await Promise.all([
      grouping.sums === false ? Promise.resolve([]) : group({ ...id, status: "$meta.status" }, sums),
      grouping.latency ? group({ ...id, bucket: "$latencyBucket" }, { calls: sums.calls }) : Promise.resolve([]),
    ]);
    return {
      sums: sumRows.map((row) => ({
        ...(row._id as UsageGroup),
        status: String(row._id.status),
        calls: Number(row.calls ?? 0),
        costUsd: Number(row.costUsd ?? 0),
        tokensIn: Number(row.tokensIn ?? 0),
        tokensOut: Number(row.tokensOut ?? 0),
      })),
      latency: latencyRows.map((row) => ({ ...(row._id as UsageGroup), bucket: Number(row._id.bucket), calls: Number(row.calls ?? 0) })),
    };
  };

  return {
    ...usageReader(cells, retentionMs),
    async listTraces(accountId, traceFilter, page) {
      const filter = resolveTraceFilter(traceFilter, retentionMs);
      const match = traceMatch(accountId, filter);
      if (page.cursor) {
        const cursor = decodeTraceCursor(page.cursor);
        const after = ids.objectIdOf(cursor.id);
        if (!after) throw new InvalidCursorError();
        const at = new Date(cursor.receivedAtMs);
        match.$or = [{ receivedAt: { $lt: at } }, { receivedAt: at, _id: { $lt: after } }];
      }
      const limit = clampPageSize(page.pageSize);
      // Sorted by the time field alone, which time-series collections sort from their buckets
      // (a second sort key would unpack and sort every matching trace). Traces sharing the page's
      // last instant are then fetched by that instant and ordered by id here, so the cursor
      // (time, id) is exact however many traces share a millisecond.
      const head = await c.traces.find(match).sort({ receivedAt: -1 }).limit(limit + 1).toArray();
      let docs = head;
      if (head.length >= limit) {
        const edge = head[limit - 1]!.receivedAt;
        const ties = await c.traces.find({ $and: [match, { receivedAt: edge }] }).toArray();
        docs = [...head.filter((d) => d.receivedAt.getTime() !== edge.getTime()), ...ties];
      }
      docs.sort((a, b) => b.receivedAt.getTime() - a.receivedAt.getTime() || (a._id.toHexString() < b._id.toHexString() ? 1 : -1));
      const more = docs.length > limit;
      docs = docs.slice(0, limit);
      const last = docs[docs.length - 1];
      return create(TracePageSchema, {
        traces: docs.map((d) => traceFromDoc(d, ids.idOf(d._id))),
        nextCursor: more && last ? encodeTraceCursor({ receivedAtMs: last.receivedAt.getTime(), id: ids.idOf(last._id) }) : "",
      });
    },
  };
}
