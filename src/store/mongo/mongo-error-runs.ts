import { timestampFromDate, timestampMs } from "@bufbuild/protobuf/wkt";
import type { StoredTrace } from "../../../gen/calltrace/v1/trace_pb.js";
import type { Document, Filter } from "mongodb";
import { errorGroupOf } from "../error-group.js";
import { foldErrorGroups, type ErrorGroupCell, type ErrorValueCell } from "../error-groups-fold.js";
import { callSpanMs, maxRunCalls, parseRunId, runIdOf, type RunKey } from "../run-id.js";
import { endedLaterFirst, runIsAfter, runSummary, sortRuns, type RunCell, type RunsAfter } from "../run-summary.js";
import { filtersAttributes, resolveTraceFilter, type ResolvedTraceFilter } from "../trace-filter.js";
import { readCutoffMs } from "../retention.js";
import type { TraceReader } from "../trace-reader.js";
import type { MongoCollections } from "./mongo-collections.js";
import { objectIdIds, traceFromDoc, type TraceDoc } from "./mongo-trace-doc.js";

type Match = (accountId: string, filter: ResolvedTraceFilter) => Filter<TraceDoc>;
type Row = { _id: Record<string, unknown>; n?: number };
type RunSpan = Pick<RunCell, "id" | "startMs" | "endMs">;

/** The calls that belong to a run (D59). */
const inRun: Filter<TraceDoc> = { $or: [{ otlpTraceId: { $exists: true } }, { sessionId: { $exists: true } }] };
/** A $group's key of a call's run. */
const runGroup = { o: "$otlpTraceId", s: "$sessionId" };
/** The latest time a Date holds, and the longest latency a trace may say (int32 milliseconds). */
const latestMs = 8_640_000_000_000_000;
const maxLatencyMs = 2_147_483_647;

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

  /**
   * A run's start and end, from `match` (the run's calls, narrowed or not): its earliest start and
   * latest end, as the embedded store's MIN and MAX. FerretDB has no $min or $max, so from sorted
   * finds: a call starts at most `longest` before it is placed and ends at most `longest` after, so
   * only the calls placed within that of the first and last placed ones can bound the run.
   */
  const runSpan = async (id: string, match: Filter<TraceDoc>, longest: number): Promise<RunSpan | undefined> => {
    const [first, last] = await Promise.all([bound(match, 1), bound(match, -1)]);
    if (!first || !last) return undefined;
    const spanOf = (doc: Pick<TraceDoc, "receivedAt" | "latencyMs" | "arrivedAt">) =>
      callSpanMs(doc.receivedAt.getTime(), doc.latencyMs, doc.arrivedAt !== undefined);
    let startMs = spanOf(first).start;
    let endMs = spanOf(last).end;
    const near = (receivedAt: Filter<TraceDoc>["receivedAt"]) =>
      c.traces.find({ $and: [match, { receivedAt }] }, { projection: { receivedAt: 1, latencyMs: 1, arrivedAt: 1 } }).toArray();
    const [early, late] = await Promise.all([
      startMs + longest > first.receivedAt.getTime() ? near({ $lt: new Date(Math.min(startMs + longest, latestMs)) }) : [],
      endMs - longest < last.receivedAt.getTime() ? near({ $gt: new Date(Math.max(endMs - longest, -latestMs)) }) : [],
    ]);
    for (const doc of early) startMs = Math.min(startMs, spanOf(doc).start);
    for (const doc of late) endMs = Math.max(endMs, spanOf(doc).end);
    return { id, startMs, endMs };
  };

  /** Sums of a run's calls, from `match` (the run's calls, narrowed or not). */
  const runCell = async (id: string, match: Filter<TraceDoc>, longest: number): Promise<RunCell | undefined> => {
    const [calls, errors, costUsd, tokensIn, tokensOut, span] = await Promise.all([
      sumBy(match, {}, 1),
      sumBy({ $and: [match, { "meta.status": "error" }] }, {}, 1),
      sumBy(match, {}, "$costUsd"),
      sumBy(match, {}, "$tokensIn"),
      sumBy(match, {}, "$tokensOut"),
      runSpan(id, match, longest),
    ]);
    const n = (rows: Row[]) => Number(rows[0]?.n ?? 0);
    if (n(calls) === 0 || !span) return undefined;
    return { ...span, calls: n(calls), errors: n(errors), costUsd: n(costUsd), tokensIn: n(tokensIn), tokensOut: n(tokensOut) };
  };

  const longestLatency = async (accountId: string, fromMs: number, timed: boolean): Promise<number> =>
    (await longestLatencyFind(c, accountId, fromMs, timed).next())?.latencyMs ?? 0;

  /** A project's calls of runs placed in `range`. */
  const placed = (accountId: string, range: Filter<TraceDoc>["receivedAt"]): Filter<TraceDoc> => ({
    $and: [{ "meta.accountId": accountId, receivedAt: range }, inRun],
  });

  /**
   * The runs that may overlap the filter's range, dearest first by their whole cost. A run ending
   * in the range or after has a call placed from its start less the longest latency of a call that
   * says its call time; the runs of those calls are summed from there, and then over their calls
   * placed earlier (their ids named, down the run indexes).
   */
  const wholeRunsByCost = async (accountId: string, filter: ResolvedTraceFilter): Promise<string[]> => {
    const keptFrom = cutoff().getTime();
    const longest = await longestLatency(accountId, Math.max(filter.sinceMs - maxLatencyMs, keptFrom), true);
    const from = new Date(Math.max(filter.sinceMs - longest, keptFrom));
    const costs = runSums(await sumBy(placed(accountId, { $gte: from }), runGroup, "$costUsd"));
    const otlp: string[] = [];
    const sessions: string[] = [];
    for (const id of costs.keys()) {
      const key = parseRunId(id)!;
      if ("otlpTraceId" in key) otlp.push(key.otlpTraceId);
      else sessions.push(key.sessionId);
    }
    const earlier = {
      $and: [
        { "meta.accountId": accountId, receivedAt: { $gte: new Date(keptFrom), $lt: from } },
        { $or: [{ otlpTraceId: { $in: otlp } }, { sessionId: { $in: sessions } }] },
      ],
    };
    const before = runSums(await sumBy(earlier, runGroup, "$costUsd"));
    for (const [id, cost] of before) if (costs.has(id)) costs.set(id, costs.get(id)! + cost);
    return byCost(costs);
  };

  /**
   * Runs most recently ended first, after `after`, exactly as the embedded store lists them:
   * filtered (`narrowed`), a run is its matching calls in the range; otherwise the whole run, when
   * it overlaps the range. Calls are scanned newest placed first; a call ends at most `longest`
   * after it is placed, so once the scan is that far below the limit-th run's end, no run it has
   * yet to meet can come before. Unfiltered, the runs with calls placed past the range's end (plus
   * `longest`) are found first, by one $group, and kept where they overlap the range: their end is
   * not where the scan meets them.
   */
  const recentRuns = async (
    accountId: string,
    filter: ResolvedTraceFilter,
    narrowed: Filter<TraceDoc> | undefined,
    limit: number,
    after: RunsAfter | undefined,
    spanOf: (id: string) => Promise<RunSpan | undefined>,
  ): Promise<string[]> => {
    const longest = await longestLatency(accountId, Math.max(filter.sinceMs - maxLatencyMs, cutoff().getTime()), true);
    const highest = Math.min(filter.untilMs + longest, latestMs);
    // Narrowed, a run is its matching calls, all in the range.
    const listed = (run: RunSpan) => narrowed !== undefined || overlaps(run, filter);
    const runs: RunSpan[] = [];
    const seen = new Set<string>();
    /** The end of the limit-th run found so far, in order; none before `limit` are found. */
    let pageEndMs = Number.NEGATIVE_INFINITY;
    // Spans only (two sorted finds a run): the figures are summed for the runs of the page alone.
    const add = async (ids: string[]) => {
      for (const run of await Promise.all(ids.map(spanOf))) if (run && listed(run) && runIsAfter(run, after)) runs.push(run);
      if (runs.length >= limit) pageEndMs = runs.sort(endedLaterFirst)[limit - 1]!.endMs;
    };
    let window = narrowed;
    if (!window) {
      const beyond = [...runSums(await sumBy(placed(accountId, { $gte: new Date(highest) }), runGroup, 1)).keys()];
      for (const id of beyond) seen.add(id);
      await add(beyond);
      window = placed(accountId, { $gte: new Date(Math.max(filter.sinceMs - longest, cutoff().getTime())), $lt: new Date(highest) });
    }
    // A run after the cursor ended before the cursor's end, so its calls were all placed before it.
    const scan = after ? { $and: [window, { receivedAt: { $lte: new Date(after.endMs) } }] } : window;
    let batch: string[] = [];
    const projection = { otlpTraceId: 1, sessionId: 1, receivedAt: 1 };
    for await (const doc of c.traces.find(scan, { projection }).sort({ receivedAt: -1 })) {
      if (doc.receivedAt.getTime() + longest < pageEndMs) break;
      const id = runIdOf(doc.otlpTraceId, doc.sessionId);
      if (id === undefined || seen.has(id)) continue;
      seen.add(id);
      batch.push(id);
      if (batch.length >= limit) {
        await add(batch);
        batch = [];
      }
    }
    await add(batch);
    return runs
      .sort(endedLaterFirst)
      .slice(0, limit)
      .map((run) => run.id);
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
      const match: Filter<TraceDoc> = { $and: [traceMatch(accountId, filter), inRun] };
      const narrowed =
        filtersAttributes(filter) ||
        filter.keyId !== undefined ||
        filter.provider !== undefined ||
        filter.model !== undefined ||
        filter.status !== undefined;
      // Unfiltered, a run's figures are the whole run's, as the embedded store's roll-up has them.
      const callsOf = (id: string): Filter<TraceDoc> => {
        const own = runMatch(accountId, parseRunId(id)!);
        return narrowed ? { $and: [match, own] } : { ...own, receivedAt: { $gte: cutoff() } };
      };
      const longest = await longestLatency(accountId, cutoff().getTime(), false);
      const cellOf = (id: string) => runCell(id, callsOf(id), longest);
      const cells: RunCell[] = [];
      const keep = (found: (RunCell | undefined)[]) => {
        for (const cell of found) if (cell !== undefined && runIsAfter(cell, after)) cells.push(cell);
      };
      if (order === "cost" && narrowed) {
        // Filtered, a run is its matching calls in the range, and costs what they cost.
        const found = byCost(runSums(await sumBy(match, runGroup, "$costUsd"))).slice(0, limit);
        keep(await Promise.all(found.map(cellOf)));
      } else if (order === "cost") {
        // The whole runs that overlap the range, by their whole cost (D72): the runs met from
        // where a call ending in the range may be placed, then summed over their earlier calls too.
        for (const ids of chunks(await wholeRunsByCost(accountId, filter), limit)) {
          for (const cell of await Promise.all(ids.map(cellOf))) if (cell && overlaps(cell, filter)) cells.push(cell);
          if (cells.length >= limit) break;
        }
      } else {
        const ids = await recentRuns(accountId, filter, narrowed ? match : undefined, limit, after, (id) => runSpan(id, callsOf(id), longest));
        keep(await Promise.all(ids.map(cellOf)));
      }
      return sortRuns(cells, order).slice(0, limit).map(runSummary);
    },

    async getRun(accountId, runId, keptSinceMs) {
      const key = parseRunId(runId);
      if (!key) return undefined;
      const match = { ...runMatch(accountId, key), receivedAt: { $gte: cutoff(keptSinceMs) } };
      const cell = await runCell(runId, match, await longestLatency(accountId, cutoff(keptSinceMs).getTime(), false));
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

/**
 * The call with the longest latency placed since `fromMs` (`timed`: of the calls that say their call
 * time, so end after they are placed), read down the (project, latency) index.
 */
export function longestLatencyFind(c: MongoCollections, accountId: string, fromMs: number, timed: boolean) {
  const match = { "meta.accountId": accountId, ...(timed ? { arrivedAt: { $exists: true } } : {}), receivedAt: { $gte: new Date(fromMs) } };
  return c.traces.find(match, { projection: { latencyMs: 1 } }).sort({ latencyMs: -1 }).limit(1);
}

/** Whether a whole run overlaps the filter's range (the embedded store's roll-up read). */
function overlaps(run: RunSpan, filter: ResolvedTraceFilter): boolean {
  return run.startMs < filter.untilMs && run.endMs >= filter.sinceMs;
}

/** Run ids by their costs, dearest first, ties by id. */
function byCost(costs: Map<string, number>): string[] {
  return [...costs].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([id]) => id);
}

/** A $group by run's sums, by run id (a call with both ids is its OTLP trace's). */
function runSums(rows: Row[]): Map<string, number> {
  const into = new Map<string, number>();
  for (const row of rows) {
    const id = runIdOf(row._id.o as string | undefined, row._id.s as string | undefined);
    if (id !== undefined) into.set(id, (into.get(id) ?? 0) + Number(row.n ?? 0));
  }
  return into;
}

function* chunks<T>(items: T[], size: number): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
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
