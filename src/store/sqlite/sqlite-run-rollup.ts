import type Database from "better-sqlite3";
import { callSpanMs, runIdOf } from "../run-id.js";
import { arrivedAtIndex, type TraceValues } from "./sqlite-trace-row.js";

interface RunSums {
  params: [accountId: string, runId: string];
  calls: number;
  errors: number;
  cost: number;
  tokensIn: number;
  tokensOut: number;
  start: number;
  end: number;
}

/**
 * Keeps the runs table (one row per run: calls sharing an OTLP trace id or a session id, D59) in
 * step with the stored rows, in the transaction that inserts them: the Runs view reads it by
 * (project, end) for recency, never the traces. One upsert per run of a batch.
 */
export function sqliteRunRollup(db: Database.Database): (stored: TraceValues[]) => void {
  const upsert = db.prepare(
    `INSERT INTO runs (account_id, run_id, calls, errors, cost_usd, tokens_in, tokens_out, start_ms, end_ms)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET calls = calls + excluded.calls, errors = errors + excluded.errors,
     cost_usd = cost_usd + excluded.cost_usd, tokens_in = tokens_in + excluded.tokens_in, tokens_out = tokens_out + excluded.tokens_out,
     start_ms = MIN(start_ms, excluded.start_ms), end_ms = MAX(end_ms, excluded.end_ms)`,
  );
  return (stored) => {
    const runs = new Map<string, RunSums>();
    for (const v of stored) {
      const [receivedAt, , accountId, , , , tokensIn, tokensOut, latencyMs, cost, status] = v;
      const runId = runIdOf(v[18], v[23]);
      if (runId === undefined) continue;
      const key = `${accountId}\u0000${runId}`;
      const { start, end } = callSpanMs(receivedAt, latencyMs, v[arrivedAtIndex] !== null);
      let run = runs.get(key);
      if (!run) runs.set(key, (run = { params: [accountId, runId], calls: 0, errors: 0, cost: 0, tokensIn: 0, tokensOut: 0, start, end }));
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
