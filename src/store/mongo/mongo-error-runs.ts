import { timestampFromDate, timestampMs } from "@bufbuild/protobuf/wkt";
import type { StoredTrace } from "../../../gen/calltrace/v1/trace_pb.js";
import type { Document, Filter } from "mongodb";
import { errorGroupOf } from "../error-group.js";
import { foldErrorGroups, type ErrorGroupCell, type ErrorValueCell } from "../error-groups-fold.js";
import { callSpanMs, maxRunCalls, parseRunId, runIdOf, type RunKey } from "../run-id.js";
import { runIsAfter, runSummary, sortRuns, type RunCell } from "../run-summary.js";
import { filtersAttributes, resolveTraceFilter, type ResolvedTraceFilter } from "../trace-filter.js";
import { readCutoffMs } from "../retention.js";
import type { TraceReader } from "../trace-reader.js";
import type { MongoCollections } from "./mongo-collections.js";
import { objectIdIds, traceFromDoc, type TraceDoc } from "./mongo-trace-doc.js";

type Match = (accountId: string, filter: ResolvedTraceFilter) => Filter<TraceDoc>;
type Row = { _id: Record<string, unknown>; n?: number };

/** The runs a list looks at: the newest calls that belong to one, most recent first, until enough runs are found. */
const runScanLimit = 20_000;

/**
 * The Errors and Runs views on MongoDB, with $match, $group and $sum only (FerretDB's subset,
 * one accumulator per $group where it computes only one). Failed calls are grouped by their
 * error text, and the texts by their masked message here, so traces stored before need no
 * rewrite (a time-series collection cannot update them); the group filter matches the texts of
 * the group. First and last seen are read per group shown, through sorted finds.
 */
export function mongoErrorsAndRuns(
  c: MongoCollections,
  retentionMs: number,
  traceMatch: Match,
): Pick<TraceReader, "errorGroups" | "listRuns" | "getRun"> {
  const ids = objectIdIds(c.traceIdKey);
  const sumBy = (match: Filter<TraceDoc>, id: Record<string, string>, field: string | 1) =>
    c.traces.aggregate<Row>([{ $match: match }, { $group: { _id: id, n: { $sum: field } } }] as Document[]).toArray();
  const bound = (match: Filter<TraceDoc>, direction: 1 | -1) => c.traces.find(match).sort({ receivedAt: direction }).limit(1).next();
  const runMatch = (accountId: string, key: RunKey): Filter<TraceDoc> =>
    "otlpTraceId" in key
      ? { "meta.accountId": accountId, otlpTraceId: key.otlpTraceId }
      : { "meta.accountId": accountId, sessionId: key.sessionId, otlpTraceId: { $exists: false } };
  const cutoff = (keptSinceMs?: number) => new Date(readCutoffMs(retentionMs, keptSinceMs));

  /** Sums of a run's calls, from `match` (the run's calls, narrowed or not). */
  const runCell = async (id: string, match: Filter<TraceDoc>): Promise<RunCell | undefined> => {
    const [calls, errors, costUsd, tokensIn, tokensOut, first, last] = await Promise.all([
      sumBy(match, {}, 1),
      sumBy({ $and: [match, { "meta.status": "error" }] }, {}, 1),
      sumBy(match, {}, "$costUsd"),
      sumBy(match, {}, "$tokensIn"),
      sumBy(match, {}, "$tokensOut"),
      bound(match, 1),
      bound(match, -1),
    ]);
    const n = (rows: Row[]) => Number(rows[0]?.n ?? 0);
    if (n(calls) === 0 || !first || !last) return undefined;
    return {
      id,
      calls: n(calls),
      errors: n(errors),
      costUsd: n(costUsd),
      tokensIn: n(tokensIn),
      tokensOut: n(tokensOut),
      startMs: callSpanMs(first.receivedAt.getTime(), first.latencyMs, first.arrivedAt !== undefined).start,
      endMs: callSpanMs(last.receivedAt.getTime(), last.latencyMs, last.arrivedAt !== undefined).end,
    };
  };

  return {
    async errorGroups(accountId, traceFilter, limit) {
      const filter = resolveTraceFilter(traceFilter, retentionMs);
      const { errorGroup } = filter;
      const failed: Filter<TraceDoc> = { $and: [traceMatch(accountId, filter), { "meta.status": "error" }] };
      const textGroup = new Map<string, string>();
      const groupOf = (text: unknown) => {
        const key = typeof text === "string" ? text : "";
        let group = textGroup.get(key);
        if (group === undefined) textGroup.set(key, (group = errorGroupOf(typeof text === "string" ? text : null).id));
        return group;
      };
      const [calls, cost, models, keys, users] = await Promise.all([
        sumBy(failed, { error: "$error" }, 1),
        sumBy(failed, { error: "$error" }, "$costUsd"),
        sumBy(failed, { error: "$error", value: "$meta.model" }, 1),
        sumBy(failed, { error: "$error", value: "$meta.keyId" }, 1),
        sumBy(failed, { error: "$error", value: "$userId" }, 1),
      ]);
      const costOf = new Map(cost.map((row) => [JSON.stringify(row._id.error ?? null), Number(row.n ?? 0)]));
      const cells: ErrorGroupCell[] = calls
        .map((row) => ({
          group: groupOf(row._id.error),
          calls: Number(row.n ?? 0),
          costUsd: costOf.get(JSON.stringify(row._id.error ?? null)) ?? 0,
          // Read below for the groups shown.
          firstMs: 0,
          lastMs: 0,
        }))
        .filter((cell) => errorGroup === undefined || cell.group === errorGroup);
      const values: ErrorValueCell[] = [];
      for (const [dimension, rows] of [
        ["model", models],
        ["key", keys],
        ["user", users],
      ] as const) {
        for (const row of rows) {
          if (row._id.value == null) continue;
          values.push({ group: groupOf(row._id.error), dimension, value: String(row._id.value), calls: Number(row.n ?? 0) });
        }
      }
      const textsOf = (group: string) => [...textGroup].filter(([, g]) => g === group).map(([text]) => text);
      const folded = await foldErrorGroups(cells, values, limit, async (groups) => {
        const text = new Map<string, string>();
        for (const group of groups) text.set(group, errorGroupOf(textsOf(group)[0] ?? null).message);
        return text;
      });
      // First and last seen of the groups shown: a sorted find each, over the group's texts.
      await Promise.all(
        folded.groups.map(async (group) => {
          const match = { $and: [failed, errorTextsMatch(textsOf(group.id))] };
          const [first, last] = await Promise.all([bound(match, 1), bound(match, -1)]);
          if (first) group.firstSeen = timestampFromDate(first.receivedAt);
          if (last) group.lastSeen = timestampFromDate(last.receivedAt);
        }),
      );
      return folded;
    },

    async listRuns(accountId, traceFilter, order, limit, after) {
      if (after && order !== "recent") throw new Error("listRuns: only the most recent first order pages after a run");
      const filter = resolveTraceFilter(traceFilter, retentionMs);
      const inRun: Filter<TraceDoc> = { $or: [{ otlpTraceId: { $exists: true } }, { sessionId: { $exists: true } }] };
      const match: Filter<TraceDoc> = { $and: [traceMatch(accountId, filter), inRun] };
      const narrowed =
        filtersAttributes(filter) ||
        filter.keyId !== undefined ||
        filter.provider !== undefined ||
        filter.model !== undefined ||
        filter.status !== undefined;
      const cellOf = (id: string) => {
        const own = runMatch(accountId, parseRunId(id)!);
        // Unfiltered, a run's figures are the whole run's, as the embedded store's roll-up has them.
        return runCell(id, narrowed ? { $and: [match, own] } : { ...own, receivedAt: { $gte: cutoff() } });
      };
      const cells: RunCell[] = [];
      const keep = (found: (RunCell | undefined)[]) => {
        for (const cell of found) if (cell !== undefined && runIsAfter(cell, after)) cells.push(cell);
      };
      if (order === "cost") {
        const costs = new Map<string, number>();
        for (const row of await sumBy(match, { o: "$otlpTraceId", s: "$sessionId" }, "$costUsd")) {
          const id = runIdOf(row._id.o as string | undefined, row._id.s as string | undefined);
          if (id !== undefined) costs.set(id, (costs.get(id) ?? 0) + Number(row.n ?? 0));
        }
        const found = [...costs]
          .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
          .slice(0, limit)
          .map(([id]) => id);
        keep(await Promise.all(found.map(cellOf)));
      } else {
        // A run after the cursor ended before the cursor's end, so its calls were all placed before it.
        const scan = after ? { $and: [match, { receivedAt: { $lte: new Date(after.endMs) } }] } : match;
        const seen = new Set<string>();
        let batch: string[] = [];
        for await (const doc of c.traces.find(scan).sort({ receivedAt: -1 }).limit(runScanLimit)) {
          const id = runIdOf(doc.otlpTraceId, doc.sessionId);
          if (id === undefined || seen.has(id)) continue;
          seen.add(id);
          batch.push(id);
          // Runs found that the cursor's page already held are passed over, and the scan goes on.
          if (cells.length + batch.length >= limit) {
            keep(await Promise.all(batch.map(cellOf)));
            batch = [];
            if (cells.length >= limit) break;
          }
        }
        keep(await Promise.all(batch.map(cellOf)));
      }
      return sortRuns(cells, order).map(runSummary);
    },

    async getRun(accountId, runId, keptSinceMs) {
      const key = parseRunId(runId);
      if (!key) return undefined;
      const match = { ...runMatch(accountId, key), receivedAt: { $gte: cutoff(keptSinceMs) } };
      const cell = await runCell(runId, match);
      if (!cell) return undefined;
      const docs = await c.traces
        .find(match)
        .sort({ receivedAt: 1 })
        .limit(maxRunCalls + 1)
        .toArray();
      const truncated = docs.length > maxRunCalls;
      const calls = docs.slice(0, maxRunCalls).map((doc) => traceFromDoc(doc, ids.idOf(doc._id)));
      calls.sort((a, b) => callStart(a) - callStart(b));
      return { run: runSummary(cell), calls, truncated };
    },
  };
}

function callStart(trace: StoredTrace): number {
  return callSpanMs(timestampMs(trace.calledAt ?? trace.receivedAt!), trace.latencyMs, trace.calledAt !== undefined).start;
}

/** The calls whose error is one of `texts` (the empty text: calls without one). */
function errorTextsMatch(texts: string[]): Filter<TraceDoc> {
  return { $or: [{ error: { $in: texts.filter((t) => t !== "") } }, ...(texts.includes("") ? [{ error: { $exists: false } }] : [])] };
}

/**
 * A filter's error group as a match on MongoDB: the failed calls of the range whose error text
 * masks to the group (found with distinct(), since stored traces hold the text, not the group).
 */
export async function errorGroupMatch(
  c: MongoCollections,
  base: Filter<TraceDoc>,
  errorGroup: string | undefined,
): Promise<Filter<TraceDoc> | undefined> {
  if (errorGroup === undefined) return undefined;
  const texts = (await c.traces.distinct("error", { $and: [base, { "meta.status": "error" }] })) as (string | null)[];
  const all = [...texts.map((t) => t ?? ""), ...(texts.length === 0 ? [] : [""])];
  return { $and: [{ "meta.status": "error" }, errorTextsMatch(all.filter((t) => errorGroupOf(t || null).id === errorGroup))] };
}
