import type Database from "better-sqlite3";
import { callEndSql, callStartSql, maxRunCalls, parseRunId } from "../run-id.js";
import { runSummary, sortRuns, type RunCell } from "../run-summary.js";
import type { sequenceIds } from "../trace-id.js";
import { filtersAttributes, resolveTraceFilter, type ResolvedTraceFilter } from "../trace-filter.js";
import type { TraceReader } from "../trace-reader.js";
import { readCutoffMs } from "../retention.js";
import { storedRunIdSql } from "./sqlite-run-rollup.js";
import { projectIs, traceConditions, tracesFor } from "./sqlite-trace-filter.js";
import { traceFromRow, traceRowSql, type TraceRow } from "./sqlite-trace-row.js";

/** A call's run id in SQL (run-id.ts's runIdOf). */
const runIdSql = "CASE WHEN otlp_trace_id IS NOT NULL THEN 'otlp:' || otlp_trace_id ELSE 'session:' || session_id END";
const runSums = `COUNT(*) AS calls, SUM(status = 'error') AS errors, SUM(cost_usd) AS costUsd, SUM(tokens_in) AS tokensIn,
  SUM(tokens_out) AS tokensOut, MIN(${callStartSql}) AS startMs, MAX(${callEndSql}) AS endMs`;

function filtersCalls(filter: ResolvedTraceFilter): boolean {
  return (
    filtersAttributes(filter) ||
    filter.keyId !== undefined ||
    filter.provider !== undefined ||
    filter.model !== undefined ||
    filter.status !== undefined
  );
}

/**
 * A run's calls, by @value (its OTLP trace id or session id), since @cutoff. A session's run is its
 * calls without an OTLP trace id (those belong to their OTLP trace's run). The unary + keeps
 * SQLite, which has no statistics, off the project's time index for an OTLP run: the (project,
 * OTLP trace id) index finds the run's few calls.
 */
export const runCallsWhere = {
  otlp: `${projectIs} AND otlp_trace_id = @value AND +received_at >= @cutoff`,
  session: `${projectIs} AND session_id = @value AND otlp_trace_id IS NULL AND received_at >= @cutoff`,
} as const;

/** The runs ending since @since whose cost is at least @threshold, found in the (project, end, cost) index alone (D75). */
export const dearRunsSql = `SELECT project_num, otlp, run_key FROM runs INDEXED BY runs_account_end
  WHERE ${projectIs} AND end_ms >= @since AND cost_usd >= @threshold`;

/** The cost of the @offset-th dearest run (from 0) ending since @since, from the same index. */
export const runCostRankSql = `SELECT cost_usd FROM runs INDEXED BY runs_account_end
  WHERE ${projectIs} AND end_ms >= @since ORDER BY cost_usd DESC LIMIT 1 OFFSET @offset`;

/**
 * The Runs view's reads on the embedded store. An unfiltered list reads the runs roll-up through
 * its (project, end, cost) index: the runs that overlap the range, whole. By cost over a range
 * without an end, the index alone names the runs at least as dear as the limit-th, and only those
 * rows are read (D75; `costIndex: false` reads every run of the range, the path it is tested
 * against). A filtered list sums the matching calls of the range per run, from the traces. A
 * run's calls come through the (project, OTLP trace id) and (project, session) indexes.
 */
export function sqliteRunReader(
  db: Database.Database,
  retentionMs: number,
  ids: ReturnType<typeof sequenceIds>,
  options = { costIndex: true },
): Pick<TraceReader, "listRuns" | "getRun"> {
  const statements = new Map<string, Database.Statement>();
  const prepare = (sql: string) => {
    let statement = statements.get(sql);
    if (!statement) statements.set(sql, (statement = db.prepare(sql)));
    return statement;
  };
  const columns = `${storedRunIdSql} AS id, calls, errors, cost_usd AS costUsd, tokens_in AS tokensIn, tokens_out AS tokensOut, start_ms AS startMs, end_ms AS endMs`;

  return {
    async listRuns(accountId, traceFilter, order, limit, after) {
      if (after && order !== "recent") throw new Error("listRuns: only the most recent first order pages after a run");
      const filter = resolveTraceFilter(traceFilter, retentionMs);
      const params: Record<string, unknown> = { account: accountId, since: filter.sinceMs, until: filter.untilMs, limit };
      const by = order === "cost" ? "costUsd DESC" : "endMs DESC";
      // The runs after the previous page's last one, in the order by end, then id (run-summary.ts runIsAfter).
      const afterRun = (end: string, id: string) => (after ? `(${end} < @afterEnd OR (${end} = @afterEnd AND ${id} > @afterId))` : "1");
      if (after) Object.assign(params, { afterEnd: after.endMs, afterId: after.id });
      let cells: RunCell[];
      if (!filtersCalls(filter) && order === "cost" && options.costIndex && traceFilter.until === undefined) {
        // Every run starts before a range without an end. Ties at the limit-th cost are all read,
        // so the order by id among them is exact.
        const threshold = prepare(runCostRankSql).pluck().get({ ...params, offset: Math.max(limit - 1, 0) }) ?? Number.NEGATIVE_INFINITY;
        cells = prepare(
          `SELECT ${columns} FROM runs WHERE (project_num, otlp, run_key) IN (${dearRunsSql}) ORDER BY ${by}, id LIMIT @limit`,
        ).all({ ...params, threshold }) as RunCell[];
      } else if (!filtersCalls(filter)) {
        cells = prepare(
          `SELECT ${columns} FROM runs WHERE ${projectIs} AND end_ms >= @since AND start_ms < @until
             AND ${afterRun("end_ms", storedRunIdSql)} ORDER BY ${by}, id LIMIT @limit`,
        ).all(params) as RunCell[];
      } else {
        const conditions = traceConditions(filter, params);
        cells = prepare(
          `SELECT ${runIdSql} AS id, ${runSums} FROM ${tracesFor(filter)}
           WHERE ${projectIs} AND received_at >= @since AND received_at < @until${conditions}
             AND (otlp_trace_id IS NOT NULL OR session_id IS NOT NULL)
           GROUP BY 1 HAVING ${afterRun(`MAX(${callEndSql})`, runIdSql)} ORDER BY ${by}, 1 LIMIT @limit`,
        ).all(params) as RunCell[];
      }
      return sortRuns(cells, order).map(runSummary);
    },
    async getRun(accountId, runId, keptSinceMs) {
      const key = parseRunId(runId);
      if (!key) return undefined;
      const cutoff = readCutoffMs(retentionMs, keptSinceMs);
      const where = runCallsWhere["otlpTraceId" in key ? "otlp" : "session"];
      const params = { account: accountId, value: "otlpTraceId" in key ? key.otlpTraceId : key.sessionId, cutoff, limit: maxRunCalls + 1 };
      const sums = prepare(`SELECT ${runSums} FROM traces WHERE ${where}`).get(params) as Omit<RunCell, "id">;
      if (sums.calls === 0) return undefined;
      const rows = prepare(`SELECT ${traceRowSql} FROM traces WHERE ${where} ORDER BY ${callStartSql}, seq LIMIT @limit`).all(params) as TraceRow[];
      const truncated = rows.length > maxRunCalls;
      if (truncated) rows.pop();
      return {
        run: runSummary({ id: runId, ...sums }),
        calls: rows.map((row) => traceFromRow(row, ids.idOf(row.seq))),
        truncated,
      };
    },
  };
}
