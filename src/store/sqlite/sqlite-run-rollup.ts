import type Database from "better-sqlite3";
import { callEndSql, callSpanMs, callStartSql } from "../run-id.js";
import { arrivedAtIndex, type TraceValues } from "./sqlite-trace-row.js";
import { numberOf } from "./sqlite-id-numbers.js";

interface RunSums {
  params: [accountId: string, otlp: number, runKey: string];
  calls: number;
  errors: number;
  cost: number;
  tokensIn: number;
  tokensOut: number;
  start: number;
  end: number;
}

/**
 * A run as the runs table keys it (D65): 1 and the OTLP trace id, or 0 and the session id (run-id.ts's
 * runIdOf); undefined for a call of neither.
 */
export function runRowKey(otlpTraceId: string | null, sessionId: string | null): [otlp: number, runKey: string] | undefined {
  if (otlpTraceId) return [1, otlpTraceId];
  if (sessionId) return [0, sessionId];
  return undefined;
}

/** A runs row's run id (run-id.ts's form), in SQL. */
export const storedRunIdSql = "CASE WHEN otlp = 1 THEN 'otlp:' ELSE 'session:' END || run_key";

const runColumns = "project_num, otlp, run_key, calls, errors, cost_usd, tokens_in, tokens_out, start_ms, end_ms";

/** How a runs row takes more calls of its run: their sums added, its span widened. */
const addToRunSql = `ON CONFLICT DO UPDATE SET calls = calls + excluded.calls, errors = errors + excluded.errors,
  cost_usd = cost_usd + excluded.cost_usd, tokens_in = tokens_in + excluded.tokens_in, tokens_out = tokens_out + excluded.tokens_out,
  start_ms = MIN(start_ms, excluded.start_ms), end_ms = MAX(end_ms, excluded.end_ms)`;

/**
 * Keeps the runs table (one row per run: calls sharing an OTLP trace id or a session id, D59) in
 * step with the stored rows, in the transaction that inserts them: the Runs view reads it by
 * (project, end) for recency, never the traces. One upsert per run of a batch.
 */
export function sqliteRunRollup(db: Database.Database): (stored: TraceValues[]) => void {
  const upsert = db.prepare(`INSERT INTO runs (${runColumns}) VALUES (${numberOf("?")}, ?, ?, ?, ?, ?, ?, ?, ?, ?) ${addToRunSql}`);
  return (stored) => {
    const runs = new Map<string, RunSums>();
    for (const v of stored) {
      const [receivedAt, , accountId, , , , tokensIn, tokensOut, latencyMs, cost, status] = v;
      const runKey = runRowKey(v[18], v[23]);
      if (runKey === undefined) continue;
      const key = `${accountId}\u0000${runKey[0]}\u0000${runKey[1]}`;
      const { start, end } = callSpanMs(receivedAt, latencyMs, v[arrivedAtIndex] !== null);
      let run = runs.get(key);
      if (!run)
        runs.set(key, (run = { params: [accountId, ...runKey], calls: 0, errors: 0, cost: 0, tokensIn: 0, tokensOut: 0, start, end }));
      run.calls += 1;
      run.errors += status === "error" ? 1 : 0;
      run.cost += cost;
      run.tokensIn += tokensIn;
      run.tokensOut += tokensOut;
      run.start = Math.min(run.start, start);
      run.end = Math.max(run.end, end);
    }
    for (const r of runs.values()) upsert.run(...r.params, r.calls, r.errors, r.cost, r.tokensIn, r.tokensOut, r.start, r.end);
  };
}

/**
 * The runs of the rows `runs_pending` notes, summed in one pass over them in sequence order (a run's
 * rows sorted together once), runRowKey in SQL: an OTLP trace id wins over a session id; an empty one is none.
 */
export const pendingRunsSql = `SELECT project_num, IFNULL(otlp_trace_id <> '', 0), CASE WHEN otlp_trace_id <> '' THEN otlp_trace_id ELSE session_id END,
    COUNT(*), SUM(failed), SUM(cost_usd), SUM(tokens_in), SUM(tokens_out), MIN(${callStartSql}), MAX(${callEndSql})
  FROM runs_pending JOIN traces ON seq BETWEEN from_seq AND to_seq
  WHERE otlp_trace_id <> '' OR session_id <> ''
  GROUP BY 1, 2, 3`;

/**
 * A large import's commits leave the runs roll-up to after its rows (D81): each such commit notes
 * the range of sequence numbers it stored in `runs_pending`, in its own transaction. `pendingRuns`
 * says whether any are noted; `addPendingRuns` adds their calls to the runs in one transaction, from
 * one sorted pass over them (each runs page written once, not once a commit), and clears the notes.
 * Exact whatever else was written meanwhile: every other commit counted its own calls.
 */
export function sqlitePendingRuns(db: Database.Database): { pendingRuns(): boolean; addPendingRuns(): void } {
  const pending = db.prepare("SELECT EXISTS (SELECT 1 FROM runs_pending)").pluck();
  const addPending = db.prepare(`INSERT INTO runs (${runColumns}) ${pendingRunsSql} ${addToRunSql}`);
  const clear = db.prepare("DELETE FROM runs_pending");
  const addPendingRuns = db.transaction(() => {
    addPending.run();
    clear.run();
  });
  return { pendingRuns: () => pending.get() === 1, addPendingRuns: () => addPendingRuns.immediate() };
}
