import { create } from "@bufbuild/protobuf";
import type { Document, Filter } from "mongodb";
import { TracePageSchema } from "../../../gen/calltrace/v1/query_pb.js";
import { PriceCheck } from "../../../gen/calltrace/v1/trace_pb.js";
import type { GroupDimension } from "../group-dimension.js";
import { clampPageSize, decodeTraceCursor, encodeTraceCursor, InvalidCursorError, newestFirst, type TraceSort } from "../trace-cursor.js";
import { readCutoffMs } from "../retention.js";
import { resolveTraceFilter, type ResolvedTraceFilter } from "../trace-filter.js";
import { TooManyGroupsError, type TraceReader } from "../trace-reader.js";
import { otherValue } from "../value-cap.js";
import { usageReader, type UsageCell, type UsageCells, type UsageGroup, type UsageGrouping } from "../usage-reader.js";
import type { MongoCollections } from "./mongo-collections.js";
import { errorGroupMatch, mongoErrorsAndRuns } from "./mongo-error-runs.js";
import { mongoHourCells } from "./mongo-hour-cells.js";
import { metadataPair, objectIdIds, traceFromDoc, type TraceDoc } from "./mongo-trace-doc.js";

/** A regular expression matching `text` literally. */
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The match of one account's traces under a resolved filter. */
export function traceMatch(
  accountId: string | undefined,
  filter: Pick<ResolvedTraceFilter, "sinceMs" | "untilMs"> & Partial<ResolvedTraceFilter>,
): Filter<TraceDoc> {
  const all: Filter<TraceDoc>[] = [];
  for (const tag of filter.tags ?? []) all.push({ tags: tag });
  for (const [k, v] of filter.metadata ?? []) all.push({ metadataPairs: metadataPair(k, v) });
  if (filter.service !== undefined) {
    all.push({
      $or: [{ serviceName: filter.service }, { serviceName: { $exists: false }, metadataPairs: metadataPair("service", filter.service) }],
    });
  }
  return {
    ...(accountId === undefined ? {} : { "meta.accountId": accountId }),
    ...(filter.keyId === undefined ? {} : { "meta.keyId": filter.keyId }),
    ...(filter.provider === undefined ? {} : { "meta.provider": filter.provider }),
    ...(filter.model === undefined && filter.modelContains === undefined
      ? {}
      : { "meta.model": filter.model ?? { $regex: literal(filter.modelContains!), $options: "i" } }),
    ...(filter.status === undefined ? {} : { "meta.status": filter.status }),
    ...(filter.userId === undefined ? {} : { userId: filter.userId }),
    ...(filter.sessionId === undefined ? {} : { sessionId: filter.sessionId }),
    ...(filter.environment === undefined ? {} : { environment: filter.environment }),
    ...(filter.otlpTraceId === undefined ? {} : { otlpTraceId: filter.otlpTraceId }),
    ...(filter.errorContains === undefined ? {} : { error: { $regex: literal(filter.errorContains), $options: "i" } }),
    ...(all.length === 0 ? {} : { $and: all }),
    receivedAt: { $gte: new Date(filter.sinceMs), $lt: new Date(filter.untilMs) },
  };
}

/**
 * One part of a dimension's groups: the traces it covers (`match`), and either the field holding
 * their group's value or the one value they all share. A dimension is one or more parts whose
 * groups together cover each trace once (each distinct tag once).
 */
interface GroupPart {
  match?: Filter<TraceDoc>;
  value?: string;
  fixed?: string;
  /** The part is the traces of `match` less those also matching this (FerretDB 1.24's $ne on an array field matches every document). */
  without?: Filter<TraceDoc>;
}

/** One cell per group and status: the cells of its price checks summed. */
function foldPriceChecks(cells: UsageCell[]): UsageCell[] {
  const folded = new Map<string, UsageCell>();
  for (const cell of cells) {
    const key = JSON.stringify([cell.day, cell.provider, cell.model, cell.country, cell.group, cell.status]);
    const into = folded.get(key);
    if (!into) {
      folded.set(key, cell);
      continue;
    }
    into.calls += cell.calls;
    into.costUsd += cell.costUsd;
    into.tokensIn += cell.tokensIn;
    into.tokensOut += cell.tokensOut;
    into.unpriced = (into.unpriced ?? 0) + (cell.unpriced ?? 0);
    into.mismatched = (into.mismatched ?? 0) + (cell.mismatched ?? 0);
  }
  return [...folded.values()];
}

/** Cells less the cells of the same group (all fields but the counts and sums), dropping groups left empty. */
function subtract<T extends { calls: number }>(all: T[], less: T[]): T[] {
  const counts = new Set(["calls", "costUsd", "tokensIn", "tokensOut", "unpriced", "mismatched"]);
  const keyOf = (cell: T) =>
    JSON.stringify(
      Object.entries(cell)
        .filter(([k]) => !counts.has(k))
        .sort(([a], [b]) => (a < b ? -1 : 1)),
    );
  const minus = new Map(less.map((cell) => [keyOf(cell), cell]));
  return all
    .map((cell) => {
      const other = minus.get(keyOf(cell)) as Record<string, number> | undefined;
      if (!other) return cell;
      const out = { ...cell } as Record<string, unknown>;
      for (const k of counts) if (typeof out[k] === "number") out[k] = (out[k] as number) - (other[k] ?? 0);
      return out as T;
    })
    .filter((cell) => cell.calls > 0);
}

/** Most values of a list-valued dimension (tags, metadata) grouped, each by a query of its own. */
export const maxGroupParts = 1000;

/** Traces without the field, or with it: how a part tells the traces marked as counting under other (TraceDoc.capped). */
const absent = { $exists: false } as const;
const present = { $exists: true } as const;

/**
 * The parts of a dimension. List-valued ones (tags, metadata) get a part per value, found with
 * distinct() or given as `wanted`: FerretDB 1.24's $unwind drops every other field of the
 * document, so sums cannot be taken after it. A trace whose value counts under the day's other
 * group (D54) is read from its marks: a part of its own for other, and, for list-valued
 * dimensions, the values that still count as themselves.
 */
async function groupParts(
  c: MongoCollections,
  base: Filter<TraceDoc>,
  dimension: GroupDimension,
  wanted: string[] | undefined,
): Promise<GroupPart[]> {
  const wants = (value: string) => !wanted || wanted.includes(value);
  /** The part of the traces counted under other, when wanted. */
  const other = (match: Filter<TraceDoc>): GroupPart[] => (wants(otherValue) ? [{ match, fixed: otherValue }] : []);
  /** A single-valued dimension: its value, unless marked as counted under other. */
  const single = (value: string, mark: "user" | "session" | "environment"): GroupPart[] => [
    { match: { [`capped.${mark}`]: absent }, value },
    ...other({ [`capped.${mark}`]: true }),
  ];
  /**
   * A part per value (those wanted, or those found) and one for the traces without any. `field`
   * holds a trace's values; `counted`, present only on a trace with a value under other, those
   * that count as themselves (undefined: every value counts); `found` lists a field's values in
   * the traces of a filter.
   */
  const perValue = async (
    field: string,
    counted: string | undefined,
    found: (field: string, filter: Filter<TraceDoc>) => Promise<string[]>,
    match: (field: string, value: string) => Filter<TraceDoc>,
    none: Omit<GroupPart, "fixed">[],
  ): Promise<GroupPart[]> => {
    // The values of unmarked traces, and those a marked trace still counts as themselves.
    const [unmarked, marked] = await Promise.all([
      wanted ?? found(field, counted === undefined ? base : { $and: [base, { [counted]: absent }] }),
      counted === undefined ? [] : found(counted, base),
    ]);
    const values = [...new Set(wanted ?? [...unmarked, ...marked])].filter((v) => v !== "" && v !== otherValue);
    if (values.length > maxGroupParts) {
      throw new TooManyGroupsError(
        `${values.length.toLocaleString("en")} distinct values of ${dimension.kind === "metadata" ? `metadata key ${dimension.key}` : dimension.kind} in this range: MongoDB groups at most ${maxGroupParts.toLocaleString("en")} of them, one query each; narrow the time range or add a filter`,
      );
    }
    const markedValues = new Set(marked);
    // Two parts rather than one $or, so that without marks in the range a value costs one plain match.
    return [
      ...values.map((v) => ({ match: counted === undefined ? match(field, v) : { ...match(field, v), [counted]: absent }, fixed: v })),
      ...(counted === undefined ? [] : values.filter((v) => markedValues.has(v)).map((v) => ({ match: match(counted, v), fixed: v }))),
      ...(wants("") ? none.map((part) => ({ ...part, fixed: "" })) : []),
    ];
  };
  const distinct = async (field: string, filter: Filter<TraceDoc>) => (await c.traces.distinct(field, filter)) as string[];
  /** The values of metadata `key` among the traces of `scope`, as themselves; `counts` says whether they count under the key's bound (not the service's). */
  const metadata = (key: string, scope: Filter<TraceDoc>, counts: boolean) =>
    perValue(
      "metadataPairs",
      counts ? "capped.pairs" : undefined,
      async (field, filter) =>
        (await distinct(field, { $and: [filter, scope, { "metadata.k": key }] }))
          .filter((pair) => pair.startsWith(`${key}=`))
          .map((pair) => pair.slice(key.length + 1)),
      (field, v) => ({ ...scope, [field]: metadataPair(key, v) }),
      // Without the key; a trace whose key counts under other keeps none of its values.
      [{ match: scope, without: { "metadata.k": key } }, ...(counts ? [{ match: { ...scope, "capped.dropped": key } }] : [])],
    ).then((parts) => (counts ? [...parts, ...other({ ...scope, "capped.otherValues": key })] : parts));
  switch (dimension.kind) {
    case "user":
      return single("$userId", "user");
    case "session":
      return single("$sessionId", "session");
    case "environment":
      return single("$environment", "environment");
    case "key":
      return [{ value: "$meta.keyId" }];
    case "provider":
      return [{ value: "$meta.provider" }];
    case "model":
      return [{ value: "$meta.model" }];
    case "tag":
      return [
        ...(await perValue("tags", "capped.tags", distinct, (field, v) => ({ [field]: v }), [{ match: { tags: absent } }])),
        ...other({ "capped.tags": present }),
      ];
    case "metadataKey":
      return [
        ...(await perValue("metadata.k", "capped.keys", distinct, (field, v) => ({ [field]: v }), [{ match: { metadata: absent } }])),
        ...other({ "capped.keys": present }),
      ];
    case "metadata":
      return metadata(dimension.key, {}, true);
    case "service":
      return [
        { match: { serviceName: present, "capped.service": absent }, value: "$serviceName" },
        ...(await metadata("service", { serviceName: absent, "capped.service": absent }, false)),
        ...other({ "capped.service": true }),
      ];
  }
}

const sums = {
  calls: { $sum: 1 },
  costUsd: { $sum: "$costUsd" },
  tokensIn: { $sum: "$tokensIn" },
  tokensOut: { $sum: "$tokensOut" },
} as const;

/** The stored field each order sorts by (`tokens` is tokensIn + tokensOut, kept when written). */
const sortFields = { time: "receivedAt", cost: "costUsd", latency: "latencyMs", tokens: "tokens" } as const;

/**
 * The dashboard's reads on MongoDB, with only $match, $group, $sum, $sort and distinct (the subset
 * FerretDB has): days and latency buckets are fields of each document, and percentiles are read
 * from bucket counts in usage-reader.ts.
 */
export function mongoTraceReader(c: MongoCollections, retentionMs: number): TraceReader {
  const ids = objectIdIds(c.traceIdKey);
  /** The match narrowed to the filter's error group, if it names one. */
  const withErrorGroup = async (match: Filter<TraceDoc>, filter: ResolvedTraceFilter): Promise<Filter<TraceDoc>> => {
    const group = await errorGroupMatch(c, match, filter.errorGroup);
    return group ? { ...match, $and: [...(match.$and ?? []), group] } : match;
  };
  const cells = async (accountId: string, filter: ResolvedTraceFilter, grouping: UsageGrouping): Promise<UsageCells> => {
    const id = {
      ...(grouping.day ? { day: "$day" } : {}),
      ...(grouping.model ? { provider: "$meta.provider", model: "$meta.model" } : {}),
      ...(grouping.country ? { country: "$country" } : {}),
    };
    const base = await withErrorGroup(traceMatch(accountId, filter), filter);
    if (grouping.hour) return mongoHourCells(c.traces, base);
    type Row = { _id: Record<string, unknown> } & Partial<Record<keyof typeof sums, number>>;
    const group = async (stages: Document[], groupId: Record<string, string>, accumulators: Record<string, unknown>): Promise<Row[]> => {
      if (c.capabilities.manyAccumulators || Object.keys(accumulators).length === 1) {
        return c.traces.aggregate<Row>([...stages, { $group: { _id: groupId, ...accumulators } }]).toArray();
      }
      // One accumulator per $group (see MongoCapabilities.manyAccumulators), joined here by group.
      const parts = await Promise.all(
        Object.entries(accumulators).map(([name, sum]) =>
          c.traces.aggregate<Row>([...stages, { $group: { _id: groupId, [name]: sum } }]).toArray(),
        ),
      );
      const joined = new Map<string, Row>();
      for (const row of parts.flat()) {
        const key = JSON.stringify(row._id);
        joined.set(key, { ...joined.get(key), ...row });
      }
      return [...joined.values()];
    };
    /** The cells of the traces matching `match`, each labelled with the part's group. */
    const partCells = async (match: Filter<TraceDoc>, part: GroupPart): Promise<UsageCells> => {
      const stages: Document[] = [{ $match: match }];
      const partId = part.value ? { ...id, group: part.value } : id;
      const [sumRows, latencyRows] = await Promise.all([
        // Grouped by price check too ($group and $sum only), folded below: the unpriced and mismatched counts.
        grouping.sums === false
          ? Promise.resolve([])
          : group(stages, { ...partId, status: "$meta.status", priceCheck: "$priceCheck" }, sums),
        grouping.latency ? group(stages, { ...partId, bucket: "$latencyBucket" }, { calls: sums.calls }) : Promise.resolve([]),
      ]);
      const groupOf = (row: Row) => (grouping.group ? { group: part.fixed ?? (row._id.group == null ? "" : String(row._id.group)) } : {});
      return {
        sums: foldPriceChecks(
          sumRows.map(({ _id: { priceCheck, ...id }, ...row }) => {
            const calls = Number(row.calls ?? 0);
            return {
              ...(id as UsageGroup),
              ...groupOf({ _id: id }),
              status: String(id.status),
              calls,
              costUsd: Number(row.costUsd ?? 0),
              tokensIn: Number(row.tokensIn ?? 0),
              tokensOut: Number(row.tokensOut ?? 0),
              unpriced: priceCheck === PriceCheck.UNPRICED ? calls : 0,
              mismatched: priceCheck === PriceCheck.MISMATCH ? calls : 0,
            };
          }),
        ),
        latency: latencyRows.map((row) => ({
          ...(row._id as UsageGroup),
          ...groupOf(row),
          bucket: Number(row._id.bucket),
          calls: Number(row.calls ?? 0),
        })),
      };
    };
    const wanted = grouping.groupValues && new Set(grouping.groupValues);
    const parts: GroupPart[] = grouping.group ? await groupParts(c, base, grouping.group, grouping.groupValues) : [{}];
    const out: UsageCells = { sums: [], latency: [] };
    for (const answer of await Promise.all(
      parts.map(async (part) => {
        const match = part.match ? { $and: [base, part.match] } : base;
        if (!part.without) return partCells(match, part);
        const [all, less] = await Promise.all([partCells(match, part), partCells({ $and: [match, part.without] }, part)]);
        return { sums: subtract(all.sums, less.sums), latency: subtract(all.latency, less.latency) };
      }),
    )) {
      // Not push(...cells): a call's arguments live on the stack, which 200,000 groups overflow.
      for (const cell of answer.sums) if (!wanted || wanted.has(cell.group ?? "")) out.sums.push(cell);
      for (const cell of answer.latency) if (!wanted || wanted.has(cell.group ?? "")) out.latency.push(cell);
    }
    return out;
  };

  return {
    ...usageReader(cells, retentionMs),
    ...mongoErrorsAndRuns(c, retentionMs, traceMatch),
    async listTraces(accountId, traceFilter, page) {
      const filter = resolveTraceFilter(traceFilter, retentionMs);
      const sort: TraceSort = page.sort ?? newestFirst;
      const field = sortFields[sort.order];
      const match = await withErrorGroup(traceMatch(accountId, filter), filter);
      const before = sort.ascending ? "$gt" : "$lt";
      const sortValue = (doc: TraceDoc) =>
        sort.order === "time"
          ? doc.receivedAt.getTime()
          : sort.order === "tokens"
            ? doc.tokensIn + doc.tokensOut
            : (doc[field as "costUsd" | "latencyMs"] ?? 0);
      const stored = (value: number) => (sort.order === "time" ? new Date(value) : value);
      if (page.cursor) {
        const cursor = decodeTraceCursor(page.cursor, sort);
        const after = ids.objectIdOf(cursor.id);
        if (!after) throw new InvalidCursorError();
        const at = stored(cursor.value);
        match.$or = [{ [field]: { [before]: at } }, { [field]: at, _id: { [before]: after } }];
      }
      const limit = clampPageSize(page.pageSize);
      const direction = sort.ascending ? 1 : -1;
      // Sorted by the one field alone, which time-series collections sort from their buckets
      // (a second sort key would unpack and sort every matching trace). Traces sharing the page's
      // last value are then fetched by that value and ordered by id here, so the cursor
      // (value, id) is exact however many traces share it.
      const head = await c.traces
        .find(match)
        .sort({ [field]: direction })
        .limit(limit + 1)
        .toArray();
      let docs = head;
      if (head.length >= limit) {
        const edge = sortValue(head[limit - 1]!);
        const ties = await c.traces.find({ $and: [match, { [field]: stored(edge) }] }).toArray();
        docs = [...head.filter((d) => sortValue(d) !== edge), ...ties];
      }
      docs.sort((a, b) => direction * (sortValue(a) - sortValue(b)) || direction * (a._id.toHexString() < b._id.toHexString() ? -1 : 1));
      const more = docs.length > limit;
      docs = docs.slice(0, limit);
      const last = docs[docs.length - 1];
      return create(TracePageSchema, {
        traces: docs.map((d) => traceFromDoc(d, ids.idOf(d._id))),
        nextCursor: more && last ? encodeTraceCursor({ value: sortValue(last), id: ids.idOf(last._id) }, sort) : "",
      });
    },
    async getTrace(accountId, id, keptSinceMs) {
      const objectId = ids.objectIdOf(id);
      if (!objectId) return undefined;
      const cutoff = readCutoffMs(retentionMs, keptSinceMs);
      const doc = await c.traces.findOne({ _id: objectId, "meta.accountId": accountId, receivedAt: { $gte: new Date(cutoff) } });
      return doc ? traceFromDoc(doc, id) : undefined;
    },
  };
}
