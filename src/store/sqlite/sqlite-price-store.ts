import type Database from "better-sqlite3";
import { newId } from "../ids.js";
import { customPriceRecord, repriceJobRecord, type StoredPrice, type StoredRepriceJob } from "../price-records.js";
import type { PriceStore, RepriceInput, RepriceJobRecord } from "../price-store.js";
import { runRowKey } from "./sqlite-run-rollup.js";
import { errorGroupIndex, type TraceRow, type TraceValues, traceColumns, traceRowSql } from "./sqlite-trace-row.js";
import { numberOf } from "./sqlite-id-numbers.js";
import { sqliteScopeCounting } from "./sqlite-scope-counters.js";
import { countedValues, dayMs, sqliteUsageRollup } from "./sqlite-usage-rollup.js";

/** The columns of custom_prices and reprice_jobs, under the names price-records.ts reads. */
const priceColumns = `id, account_id AS accountId, provider, match_kind AS matchKind, pattern, price, effective_from AS effectiveFrom,
  effective_until AS effectiveUntil, created_at AS createdAt, updated_at AS updatedAt`;
const jobColumns = `id, account_id AS accountId, range_from AS "from", range_until AS "until", state, total, done, changed, cursor, error,
  created_at AS createdAt, updated_at AS updatedAt`;

const rowValues = (row: TraceRow): TraceValues => traceColumns.map((c) => row[c]) as unknown as TraceValues;

const repriceInput = (r: TraceRow): RepriceInput => ({
  receivedAt: new Date(r.received_at),
  provider: r.provider,
  model: r.model,
  source: r.source,
  costUsd: r.cost_usd,
  serverCostUsd: r.server_cost_usd ?? undefined,
  priceCheck: r.price_check,
  tokensIn: r.tokens_in,
  tokensOut: r.tokens_out,
  tokensCachedIn: r.tokens_cached_in ?? undefined,
  tokensCacheWrite: r.tokens_cache_write ?? undefined,
  tokensCacheWrite1h: r.tokens_cache_write_1h ?? undefined,
  tokensAudioIn: r.tokens_audio_in ?? undefined,
  tokensAudioOut: r.tokens_audio_out ?? undefined,
  webSearchRequests: r.web_search_requests ?? undefined,
  serviceTier: r.service_tier ?? undefined,
});

/** The embedded store's custom prices and re-price jobs. */
export function createSqlitePriceStore(db: Database.Database): PriceStore {
  const s = {
    list: db.prepare(`SELECT ${priceColumns} FROM custom_prices WHERE account_id = ? ORDER BY created_at, id`),
    get: db.prepare(`SELECT ${priceColumns} FROM custom_prices WHERE account_id = ? AND id = ?`),
    insert: db.prepare(
      `INSERT INTO custom_prices (id, account_id, provider, match_kind, pattern, price, effective_from, effective_until, created_at, updated_at)
       VALUES (@id, @accountId, @provider, @matchKind, @pattern, @price, @effectiveFrom, @effectiveUntil, @createdAt, @updatedAt)`,
    ),
    update: db.prepare(
      `UPDATE custom_prices SET provider = @provider, match_kind = @matchKind, pattern = @pattern, price = @price,
         effective_from = @effectiveFrom, effective_until = @effectiveUntil, updated_at = @updatedAt
       WHERE account_id = @accountId AND id = @id`,
    ),
    delete: db.prepare(`DELETE FROM custom_prices WHERE account_id = ? AND id = ?`),
    countTraces: db.prepare(`SELECT COUNT(*) FROM traces WHERE project_num = ${numberOf("?")} AND received_at >= ? AND received_at < ?`).pluck(),
    insertJob: db.prepare(
      `INSERT INTO reprice_jobs (id, account_id, range_from, range_until, state, total, done, changed, cursor, error, created_at, updated_at)
       VALUES (@id, @account_id, @range_from, @range_until, 'running', @total, 0, 0, '', '', @now, @now)`,
    ),
    getJob: db.prepare(`SELECT ${jobColumns} FROM reprice_jobs WHERE account_id = ? AND id = ?`),
    running: db.prepare(`SELECT ${jobColumns} FROM reprice_jobs WHERE state = 'running' ORDER BY created_at`),
    saveJob: db.prepare(
      `UPDATE reprice_jobs SET state = @state, done = @done, changed = @changed, cursor = @cursor, error = @error, updated_at = @updated_at WHERE id = @id`,
    ),
    // Receive order, then insertion order: a cursor of (received_at, seq) resumes exactly after the last trace seen.
    nextTraces: db.prepare(
      `SELECT ${traceRowSql} FROM traces
       WHERE project_num = ${numberOf("@account_id")} AND received_at < @until AND (received_at > @at OR (received_at = @at AND seq > @seq))
       ORDER BY received_at, seq LIMIT @limit`,
    ),
    setPrices: db.prepare(`UPDATE traces SET cost_usd = ?, server_cost_usd = ?, price_check = ? WHERE seq = ?`),
    // The roll-ups of runs and error groups count calls and sum cost_usd: a changed cost moves their sums alone.
    runCost: db.prepare(`UPDATE runs SET cost_usd = cost_usd + ? WHERE project_num = ${numberOf("?")} AND otlp = ? AND run_key = ?`),
    errorCost: db.prepare(
      `UPDATE error_group_daily SET cost_usd = cost_usd + ? WHERE account_id = ? AND day = ? AND group_id = ? AND provider = ? AND model = ? AND key_id = ?`,
    ),
  };
  // A trace re-priced counts again where it counted first: under its value, or under other (D54).
  const rollup = sqliteUsageRollup(db, countedValues(db));
  const scopeCells = sqliteScopeCounting(db);

  const priceParams = (projectId: string, id: string, input: Parameters<PriceStore["createPrice"]>[1], now: number): StoredPrice => ({
    id,
    accountId: projectId,
    provider: input.provider,
    matchKind: input.matchKind,
    pattern: input.pattern,
    price: JSON.stringify(input.price),
    effectiveFrom: input.effectiveFrom?.getTime() ?? null,
    effectiveUntil: input.effectiveUntil?.getTime() ?? null,
    createdAt: now,
    updatedAt: now,
  });

  const saveJob = (job: RepriceJobRecord): RepriceJobRecord => {
    const updated = { ...job, updatedAt: new Date() };
    s.saveJob.run({ ...updated, updated_at: updated.updatedAt.getTime() });
    return updated;
  };

  // One transaction per batch: the traces, their roll-ups and the job's cursor move together, so
  // a crash leaves the job exactly where its last committed batch ended.
  const repriceBatch = db.transaction((job: RepriceJobRecord, reprice: Parameters<PriceStore["repriceBatch"]>[1], limit: number) => {
    const [at, seq] = job.cursor === "" ? [job.from.getTime(), -1] : job.cursor.split(":").map(Number);
    const rows = s.nextTraces.all({ account_id: job.projectId, until: job.until.getTime(), at, seq, limit }) as TraceRow[];
    const before: TraceValues[] = [];
    const after: TraceValues[] = [];
    for (const row of rows) {
      const next = reprice(repriceInput(row));
      const serverCost = next.serverCostUsd ?? null;
      if (next.costUsd === row.cost_usd && serverCost === row.server_cost_usd && next.priceCheck === row.price_check) continue;
      s.setPrices.run(next.costUsd, serverCost, next.priceCheck, row.seq);
      const old = rowValues(row);
      const costDelta = next.costUsd - row.cost_usd;
      if (costDelta !== 0) {
        const runKey = runRowKey(row.otlp_trace_id, row.session_id);
        if (runKey !== undefined) s.runCost.run(costDelta, row.account_id, ...runKey);
        const group = old[errorGroupIndex];
        if (row.status === "error" && group) {
          s.errorCost.run(costDelta, row.account_id, Math.floor(row.received_at / dayMs), group, row.provider, row.model, row.key_id);
        }
      }
      before.push(old);
      after.push(Object.assign([...old], { 9: next.costUsd, 15: serverCost, 16: next.priceCheck }) as TraceValues);
    }
    if (before.length > 0) {
      rollup(before, -1);
      rollup(after, 1);
      scopeCells(before, -1);
      scopeCells(after, 1);
    }
    const last = rows.at(-1);
    return saveJob({
      ...job,
      done: job.done + rows.length,
      changed: job.changed + before.length,
      cursor: last ? `${last.received_at}:${last.seq}` : job.cursor,
      state: rows.length < limit ? "done" : "running",
    });
  });

  return {
    async listPrices(projectId) {
      return (s.list.all(projectId) as StoredPrice[]).map(customPriceRecord);
    },
    async createPrice(projectId, input) {
      const params = priceParams(projectId, newId("prc"), input, Date.now());
      s.insert.run(params);
      return customPriceRecord(params);
    },
    async updatePrice(projectId, id, input) {
      const existing = s.get.get(projectId, id) as StoredPrice | undefined;
      if (!existing) return undefined;
      const params = { ...priceParams(projectId, id, input, Date.now()), createdAt: existing.createdAt };
      s.update.run(params);
      return customPriceRecord(params);
    },
    async deletePrice(projectId, id) {
      return s.delete.run(projectId, id).changes > 0;
    },
    async createRepriceJob(projectId, { from, until }) {
      const now = Date.now();
      const id = newId("rpj");
      const total = s.countTraces.get(projectId, from.getTime(), until.getTime()) as number;
      s.insertJob.run({ id, account_id: projectId, range_from: from.getTime(), range_until: until.getTime(), total, now });
      return repriceJobRecord(s.getJob.get(projectId, id) as StoredRepriceJob);
    },
    async getRepriceJob(projectId, id) {
      const row = s.getJob.get(projectId, id) as StoredRepriceJob | undefined;
      return row && repriceJobRecord(row);
    },
    async runningRepriceJobs() {
      return (s.running.all() as StoredRepriceJob[]).map(repriceJobRecord);
    },
    async repriceBatch(job, reprice, limit) {
      return repriceBatch.immediate(job, reprice, limit);
    },
    async failRepriceJob(job, error) {
      saveJob({ ...job, state: "failed", error });
    },
  };
}
