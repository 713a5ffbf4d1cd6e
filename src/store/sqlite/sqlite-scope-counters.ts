import type Database from "better-sqlite3";
import { PriceCheck } from "../../../gen/calltrace/v1/trace_pb.js";
import { type CountedCall, keepMinuteMs, keepQuarterMs, minuteMs, quarterMs, type ScopeCounters } from "../scope-counters.js";
import { type ScopeTally, tallyScopeCells } from "../scope-tally.js";
import type { TraceValues } from "./sqlite-trace-row.js";
import { idOf, numberOf } from "./sqlite-id-numbers.js";

/** The columns of a trace the counters read, as the traces table names them (the key by its id). */
interface CountedRow {
  received_at: number;
  key_id: string;
  model: string;
  status: string;
  cost_usd: number;
  latency_ms: number;
  price_check: number;
  user_id: string | null;
  environment: string | null;
  tags: string | null;
  metadata: string | null;
}

function countedCall(row: CountedRow): CountedCall {
  return {
    keyId: row.key_id,
    model: row.model,
    status: row.status,
    costUsd: row.cost_usd,
    latencyMs: row.latency_ms,
    unpriced: row.price_check === PriceCheck.UNPRICED,
    userId: row.user_id ?? undefined,
    environment: row.environment ?? undefined,
    tags: row.tags === null ? [] : (JSON.parse(row.tags) as string[]),
    metadata: row.metadata === null ? [] : Object.entries(JSON.parse(row.metadata) as Record<string, string>),
  };
}

/** Writes a tally's cells into `part` (0: the writer's, added; 1: the back-fill's, whose cells it is alone in). */
function cellWriter(db: Database.Database) {
  const cell = db.prepare(
    `INSERT INTO scope_cells (account_id, scope, resolution, start, part, calls, errors, cost_usd, unpriced) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT DO UPDATE SET calls = calls + excluded.calls, errors = errors + excluded.errors,
       cost_usd = cost_usd + excluded.cost_usd, unpriced = unpriced + excluded.unpriced`,
  );
  const latency = db.prepare(
    `INSERT INTO scope_latency_cells (account_id, scope, start, part, bucket, calls) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT DO UPDATE SET calls = calls + excluded.calls`,
  );
  return (accountId: string, tally: ScopeTally, part: 0 | 1, sign: 1 | -1 = 1) => {
    for (const c of tally.cells) {
      cell.run(accountId, c.scope, c.resolution, c.start, part, sign * c.calls, sign * c.errors, sign * c.costUsd, sign * c.unpriced);
    }
    for (const c of tally.latency) latency.run(accountId, c.scope, c.start, part, c.bucket, sign * c.calls);
  };
}

/**
 * The writer's side: counts a committed batch's traces in the cells of the scopes their projects
 * watch. Runs inside the batch's transaction (sqlite-batch-commit.ts), so a cell never counts a
 * trace that was not committed, or misses one that was; a watch begun by another connection is
 * either before the batch (counted here) or after it (back-filled from the traces).
 */
export function sqliteScopeCounting(db: Database.Database): (traces: TraceValues[], sign?: 1 | -1) => void {
  const watches = db.prepare(`SELECT scope FROM scope_watches WHERE account_id = ?`).pluck();
  const write = cellWriter(db);
  // -1 takes traces back out: a re-priced trace's old values (sqlite-price-store.ts), as the roll-ups do.
  return (traces, sign = 1) => {
    const byAccount = new Map<string, TraceValues[]>();
    for (const t of traces) {
      const list = byAccount.get(t[2]);
      if (list) list.push(t);
      else byAccount.set(t[2], [t]);
    }
    for (const [accountId, list] of byAccount) {
      const watched = new Set(watches.all(accountId) as string[]);
      if (watched.size === 0) continue;
      const calls = list.map((t) => ({ atMs: t[0], call: countedCall(rowOfValues(t)) }));
      write(accountId, tallyScopeCells(calls, (scope) => watched.has(scope)), 0, sign);
    }
  };
}

function rowOfValues(t: TraceValues): CountedRow {
  return {
    received_at: t[0],
    key_id: t[1],
    model: t[5],
    status: t[10],
    cost_usd: t[9],
    latency_ms: t[8],
    price_check: t[16],
    user_id: t[22],
    environment: t[26],
    tags: t[24],
    metadata: t[25],
  };
}

/** The reading side, and watches begun with their back-fill in one write transaction. */
export function sqliteScopeCounters(db: Database.Database, now: () => number = Date.now): ScopeCounters {
  const statements = {
    watch: db.prepare(`INSERT INTO scope_watches (account_id, scope, since) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`),
    history: db.prepare(
      `SELECT received_at, ${idOf("key_num")} AS key_id, ${idOf("model_num")} AS model, status, cost_usd, latency_ms, price_check, user_id, environment, json(tags) AS tags, json(metadata) AS metadata
       FROM traces WHERE project_num = ${numberOf("?")} AND received_at >= ?`,
    ),
    cells: db.prepare(
      `SELECT start, SUM(calls) AS calls, SUM(errors) AS errors, SUM(cost_usd) AS costUsd, SUM(unpriced) AS unpriced FROM scope_cells
       WHERE account_id = ? AND scope = ? AND resolution = ? AND start >= ? AND start < ? GROUP BY start`,
    ),
    latency: db.prepare(
      `SELECT start, bucket, SUM(calls) AS calls FROM scope_latency_cells
       WHERE account_id = ? AND scope = ? AND start >= ? AND start < ? GROUP BY start, bucket`,
    ),
    pruneCells: db.prepare(`DELETE FROM scope_cells WHERE resolution = ? AND start < ?`),
    pruneLatency: db.prepare(`DELETE FROM scope_latency_cells WHERE start < ?`),
    allWatches: db.prepare(`SELECT account_id AS accountId, scope FROM scope_watches`),
    unwatch: db.prepare(`DELETE FROM scope_watches WHERE account_id = ? AND scope = ?`),
    dropCells: db.prepare(`DELETE FROM scope_cells WHERE account_id = ? AND scope = ?`),
    dropLatency: db.prepare(`DELETE FROM scope_latency_cells WHERE account_id = ? AND scope = ?`),
  };
  const write = cellWriter(db);

  // One write transaction: the traces committed before it are back-filled, those after it counted by the writer.
  const watch = db.transaction((accountId: string, scopes: string[], at: number) => {
    const fresh = new Set(scopes.filter((scope) => statements.watch.run(accountId, scope, at).changes === 1));
    if (fresh.size === 0) return;
    // Read once for all of them: the project's traces within the longest keep (once per new scope, never while evaluating).
    const rows = statements.history.iterate(accountId, at - keepQuarterMs) as IterableIterator<CountedRow>;
    const calls = (function* () {
      for (const row of rows) yield { atMs: row.received_at, call: countedCall(row) };
    })();
    write(accountId, tallyScopeCells(calls, (scope) => fresh.has(scope), at), 1);
  });

  const prune = db.transaction((nowMs: number, keep: Map<string, Set<string>>) => {
    statements.pruneCells.run(quarterMs, nowMs - keepQuarterMs);
    statements.pruneCells.run(minuteMs, nowMs - keepMinuteMs);
    statements.pruneLatency.run(nowMs - keepMinuteMs);
    for (const { accountId, scope } of statements.allWatches.all() as { accountId: string; scope: string }[]) {
      if (keep.get(accountId)?.has(scope)) continue;
      statements.unwatch.run(accountId, scope);
      statements.dropCells.run(accountId, scope);
      statements.dropLatency.run(accountId, scope);
    }
  });

  return {
    async watch(accountId, scopes) {
      if (scopes.length > 0) watch.immediate(accountId, [...new Set(scopes)], now());
    },
    async cells(accountId, scope, resolution, fromMs, toMs) {
      return statements.cells.all(accountId, scope, resolution, fromMs, toMs) as Awaited<ReturnType<ScopeCounters["cells"]>>;
    },
    async latency(accountId, scope, fromMs, toMs) {
      return statements.latency.all(accountId, scope, fromMs, toMs) as Awaited<ReturnType<ScopeCounters["latency"]>>;
    },
    async prune(nowMs, keep) {
      prune.immediate(nowMs, keep);
    },
  };
}
