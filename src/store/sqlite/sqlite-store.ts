import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { KeyLimitError, type KeyStore, type NewKey } from "../key-store.js";
import type { ApiKeyRecord, KeyScope } from "../records.js";
import type { Store } from "../store.js";
import type { ModelCalls, TraceQuery } from "../trace-store.js";
import { newId } from "../ids.js";
import { latencyBucket } from "../latency-bucket.js";
import { errorGroupOf } from "../error-group.js";
import { retentionMs, type RetentionOptions } from "../retention.js";
import { sequenceIds } from "../trace-id.js";
import { migrate } from "./sqlite-schema.js";
import { sqliteDeferredIndexes, withBuildSettings } from "./sqlite-deferred-indexes.js";
import { sqliteOtlpSpans } from "./sqlite-otlp-spans.js";
import { sqliteScopeCounters } from "./sqlite-scope-counters.js";
import { type TraceReadOptions, sqliteTraceReader } from "./sqlite-trace-reader.js";
import { openSqliteDatabase } from "./sqlite-database.js";
import { errorUsersPerGroup } from "./sqlite-error-rollup.js";
import { traceFromRow, traceRowSql, type TraceRow } from "./sqlite-trace-row.js";
import { idOf, numberOf } from "./sqlite-id-numbers.js";
import { dayMs } from "./sqlite-usage-rollup.js";
import { sqliteWriterThread } from "./sqlite-writer-thread.js";
import type { AttributeSetOptions } from "./sqlite-batch-commit.js";
import { defaultValuesPerDay, type ValueCapOptions } from "../value-cap.js";
import { createSqliteTeamStore } from "./sqlite-team-store.js";
import { createSqlitePriceStore } from "./sqlite-price-store.js";
import { createSqliteUserStore } from "./sqlite-user-store.js";
import { createSqliteAlertStore } from "./sqlite-alert-store.js";

/** The daily roll-ups, each keyed by project (account_id, or its number in project_num: numberedRollups) and day. */
const rollupTables = [
  "usage_daily",
  "usage_country_daily",
  "usage_environment_daily",
  "latency_environment_daily",
  "latency_daily",
  "latency_daily_all",
  "group_daily",
  "error_groups",
  "error_group_daily",
  "error_group_users",
];

const numberedRollups = new Set(["group_daily"]);

/** The projects whose rows retention deletes: @project, or every one (each through its own index range). */
export const expiringProjects = "project_num IN (SELECT num FROM id_numbers WHERE @project IS NULL OR id = @project)";

/** How often expired traces are deleted, besides once at start-up. */
const sweepIntervalMs = 60 * 60 * 1000;
/** Rows per page when exporting, so no read cursor stays open across awaits. */
const exportPageSize = 1000;

interface KeyRow {
  id: string;
  account_id: string;
  plan: string;
  name: string;
  prefix: string;
  hash: string;
  created_at: number;
  revoked_at: number | null;
  last_used_at: number | null;
  expires_at: number | null;
  scope: string;
  retention_days: number | null;
}

/**
 * The embedded store: one SQLite database file under DATA_DIR in WAL mode. Commits are
 * fsynced (synchronous=FULL), so a committed batch survives kill -9 and power loss; several
 * processes (the server and the CLI) may open the same file. Trace batches are committed on a
 * writer thread; reads and key management use this thread's connection.
 */
export function openSqliteStore(
  dataDir: string,
  options: RetentionOptions & ValueCapOptions & TraceReadOptions & { attributeSets?: AttributeSetOptions } = {},
): Store {
  const keepMs = retentionMs(options);
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, "calltrace.db");
  const db = openSqliteDatabase(file);
  // Used by the roll-ups' migration and by reads of partial days.
  db.function("latency_bucket", { deterministic: true }, (ms) => latencyBucket(Number(ms)));
  const valuesPerDay = options.groupValuesPerDay ?? defaultValuesPerDay;
  // Used by the error groups' migration, which groups the traces stored before it.
  db.function("error_group_of", { deterministic: true }, (error) => errorGroupOf(error as string | null).id);
  db.function("error_message", { deterministic: true }, (error) => errorGroupOf(error as string | null).message);
  db.function("values_per_day", { deterministic: true }, () => valuesPerDay);
  db.function("error_users_per_group", { deterministic: true }, () => errorUsersPerGroup);
  // With a build's settings (D84): a migration that rebuilds an index sorts as an import's builds
  // do, and a process opening the store meanwhile (another worker) waits for it rather than failing
  // at the usual lock wait (docs/operations.md, "Upgrading the embedded store").
  withBuildSettings(db, () => migrate(db));
  // Indexes a killed import left dropped are built before anything reads or writes (D77).
  const deferrableIndexes = sqliteDeferredIndexes(db, `${file}-import`);
  deferrableIndexes.rebuildUnlessImporting();
  const writer = sqliteWriterThread({ file, groupValuesPerDay: valuesPerDay, ...(options.attributeSets ? { attributeSets: options.attributeSets } : {}) });
  const ids = sequenceIds(db.prepare(`SELECT value FROM store_secrets WHERE name = 'trace_id_key'`).pluck().get() as Buffer);

  const statements = {
    deleteExpiredTraces: db.prepare(`DELETE FROM traces WHERE ${expiringProjects} AND received_at < @cutoff`),
    // Roll-ups of days that lie wholly before the cut-off, one statement per table.
    deleteExpiredDays: rollupTables.map((table) =>
      db.prepare(
        numberedRollups.has(table)
          ? `DELETE FROM ${table} WHERE day < @day AND ${expiringProjects}`
          : `DELETE FROM ${table} WHERE day < @day AND (@project IS NULL OR account_id = @project)`,
      ),
    ),
    // Hours that lie wholly before the cut-off's day, as the daily roll-ups' days.
    deleteExpiredHours: db.prepare(`DELETE FROM usage_hourly WHERE hour < @day * 24 AND (@project IS NULL OR account_id = @project)`),
    // Runs whose last call is past the cut-off (a run with calls either side keeps its sums).
    deleteExpiredRuns: db.prepare(`DELETE FROM runs WHERE end_ms < @cutoff AND ${expiringProjects}`),
    projectsKeepingLess: db.prepare(`SELECT id, retention_days FROM projects WHERE retention_days > 0`),
    // Whole days from the daily roll-up, the part of the first day from the traces.
    modelCalls: db.prepare(
      `SELECT provider, model, SUM(calls) AS calls FROM usage_daily WHERE day >= @fromDay GROUP BY provider, model
       UNION ALL
       SELECT ${idOf("provider_num")}, ${idOf("model_num")}, COUNT(*) AS calls FROM traces
       WHERE project_num IN (SELECT num FROM id_numbers) AND received_at >= @since AND received_at < @fromDay * ${dayMs} GROUP BY provider_num, model_num`,
    ),
    // Traces placed from the month's first day, and those placed before it that arrived in it (D58).
    monthlyTraceCount: db
      .prepare(
        `SELECT (SELECT COALESCE(SUM(calls), 0) FROM usage_daily WHERE account_id = @account AND key_id = @key AND day >= @since / ${dayMs})
              + (SELECT COUNT(*) FROM traces WHERE key_num = ${numberOf("@key")} AND arrived_at >= @since AND received_at < @since
                   AND arrived_at / 86400000 <> received_at / 86400000)`,
      )
      .pluck(),
    exportPage: db.prepare(
      `SELECT ${traceRowSql} FROM traces WHERE seq > @after AND received_at >= @since AND received_at < @until
         AND (@account_id IS NULL OR project_num = ${numberOf("@account_id")})
       ORDER BY seq LIMIT ${exportPageSize}`,
    ),
    insertKey: db.prepare(
      `INSERT INTO api_keys (id, account_id, name, prefix, hash, created_at, expires_at, scope) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    activeKeys: db.prepare(
      `SELECT COUNT(*) FROM api_keys WHERE account_id = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)`,
    ).pluck(),
    renameKey: db.prepare(`UPDATE api_keys SET name = ? WHERE id = ?`),
    keyByHash: db.prepare(`SELECT k.*, a.plan, a.retention_days FROM api_keys k JOIN projects a ON a.id = k.account_id WHERE k.hash = ?`),
    keyById: db.prepare(`SELECT k.*, a.plan, a.retention_days FROM api_keys k JOIN projects a ON a.id = k.account_id WHERE k.id = ?`),
    keysByPrefix: db.prepare(`SELECT k.*, a.plan, a.retention_days FROM api_keys k JOIN projects a ON a.id = k.account_id WHERE k.prefix = ?`),
    listKeys: db.prepare(
      `SELECT k.*, a.plan, a.retention_days FROM api_keys k JOIN projects a ON a.id = k.account_id
       WHERE (@account_id IS NULL OR k.account_id = @account_id) ORDER BY k.created_at, k.id`,
    ),
    revokeKey: db.prepare(`UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`),
  };

  const insertKey = db.transaction(({ accountId, name, scope, hash, prefix, expiresAt, maxActive }: NewKey): KeyRow => {
    const now = Date.now();
    if (maxActive !== undefined && (statements.activeKeys.get(accountId, now) as number) >= maxActive) throw new KeyLimitError(maxActive);
    const id = newId("key");
    statements.insertKey.run(id, accountId, name, prefix, hash, now, expiresAt?.getTime() ?? null, scope ?? "ingest");
    return statements.keyById.get(id) as KeyRow;
  });

  const keys: KeyStore = {
    async createKey(input) {
      // IMMEDIATE: the count and the insert hold the write lock together, across processes too.
      return toKey(insertKey.immediate(input));
    },
    async findKeyByHash(hash) {
      const row = statements.keyByHash.get(hash) as KeyRow | undefined;
      return row && toKey(row);
    },
    async listKeys(accountId) {
      return (statements.listKeys.all({ account_id: accountId ?? null }) as KeyRow[]).map(toKey);
    },
    async revokeKey(idOrPrefix) {
      const row = (statements.keyById.get(idOrPrefix) ?? uniqueRow(statements.keysByPrefix.all(idOrPrefix))) as KeyRow | undefined;
      if (!row) return undefined;
      statements.revokeKey.run(Date.now(), row.id);
      return toKey(statements.keyById.get(row.id) as KeyRow);
    },
    async renameKey(id, name) {
      if (statements.renameKey.run(name, id).changes === 0) return undefined;
      return toKey(statements.keyById.get(id) as KeyRow);
    },
  };

  /**
   * Past the retention period: traces, and roll-up days that lie wholly before the cut-off (the
   * cut-off's own day is read from the traces, so its roll-up row may stay).
   */
  const deleteBefore = (cutoff: number, project: string | null) => {
    statements.deleteExpiredTraces.run({ cutoff, project });
    statements.deleteExpiredRuns.run({ cutoff, project });
    for (const statement of [...statements.deleteExpiredDays, statements.deleteExpiredHours]) statement.run({ day: Math.floor(cutoff / dayMs), project });
  };
  /** RETENTION_DAYS for every project, then the shorter retention some projects set (docs/teams.md). */
  const deleteExpired = db.transaction((now: number) => {
    if (keepMs > 0) deleteBefore(now - keepMs, null);
    for (const { id, retention_days } of statements.projectsKeepingLess.all() as Array<{ id: string; retention_days: number }>) {
      deleteBefore(now - retention_days * dayMs, id);
    }
  });
  deleteExpired(Date.now());
  const sweeper = setInterval(() => deleteExpired(Date.now()), sweepIntervalMs).unref();

  return {
    ...sqliteTraceReader(db, keepMs, ids, options),
    keys,
    users: createSqliteUserStore(db),
    teams: createSqliteTeamStore(db),
    // The key that seals webhook secrets lives beside the database, not in it: a copy of the
    // database alone does not reveal them (docs/alerts.md).
    alerts: createSqliteAlertStore(db, join(dataDir, "alerts-secret.key")),
    prices: createSqlitePriceStore(db),
    scopeCounters: sqliteScopeCounters(db),
    writeBatch(writes) {
      return writer.write(writes, deferrableIndexes.deferring());
    },
    // The writer thread merges the batches queued behind a commit into the next one: small
    // batches keep it committing while the event loop parses (measured: 32 x 8 beat 1000 x 8
    // by about a third under 50 concurrent clients).
    handover: { maxInFlight: 8, batchSize: 32 },
    otlpSpans: sqliteOtlpSpans(db),
    async monthlyTraceCount(key, monthStart) {
      return statements.monthlyTraceCount.get({ account: key.accountId, key: key.id, since: monthStart.getTime() }) as number;
    },
    async *exportTraces(query: TraceQuery) {
      const params = {
        after: 0,
        since: Math.max(query.since?.getTime() ?? 0, keepMs === 0 ? 0 : Date.now() - keepMs),
        until: query.until?.getTime() ?? Number.MAX_SAFE_INTEGER,
        account_id: query.accountId ?? null,
      };
      for (;;) {
        const rows = statements.exportPage.all(params) as TraceRow[];
        for (const row of rows) yield traceFromRow(row, ids.idOf(row.seq));
        if (rows.length < exportPageSize) return;
        params.after = rows[rows.length - 1]!.seq;
      }
    },
    async modelCalls(since: Date) {
      const from = Math.max(since.getTime(), keepMs === 0 ? 0 : Date.now() - keepMs);
      const calls = new Map<string, ModelCalls>();
      for (const row of statements.modelCalls.all({ since: from, fromDay: Math.ceil(from / dayMs) }) as ModelCalls[]) {
        const key = `${row.provider}\u0000${row.model}`;
        const seen = calls.get(key);
        if (seen) seen.calls += row.calls;
        else calls.set(key, { ...row });
      }
      return [...calls.values()];
    },
    deferrableIndexes,
    async ping() {
      db.prepare("SELECT 1").get();
    },
    async deleteExpired() {
      deleteExpired(Date.now());
    },
    async close() {
      clearInterval(sweeper);
      await writer.close();
      db.close();
    },
  };
}

/** A prefix names a key only when exactly one key has it. */
function uniqueRow(rows: unknown[]): unknown {
  return rows.length === 1 ? rows[0] : undefined;
}

function toKey(row: KeyRow): ApiKeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    plan: row.plan,
    ...(row.retention_days ? { retentionDays: row.retention_days } : {}),
    scope: row.scope as KeyScope,
    name: row.name,
    prefix: row.prefix,
    hash: row.hash,
    createdAt: new Date(row.created_at),
    revokedAt: row.revoked_at === null ? undefined : new Date(row.revoked_at),
    lastUsedAt: row.last_used_at === null ? undefined : new Date(row.last_used_at),
    expiresAt: row.expires_at === null ? undefined : new Date(row.expires_at),
  };
}
