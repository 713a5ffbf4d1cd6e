import type Database from "better-sqlite3";
import { create } from "@bufbuild/protobuf";
import { TracePageSchema } from "../../../gen/calltrace/v1/query_pb.js";
import { clampPageSize, decodeTraceCursor, encodeTraceCursor, InvalidCursorError } from "../trace-cursor.js";
import { resolveTraceFilter, type ResolvedTraceFilter } from "../trace-filter.js";
import type { TraceReader } from "../trace-reader.js";
import { usageReader, type LatencyCell, type UsageCell, type UsageCells, type UsageGrouping } from "../usage-reader.js";
import type { sequenceIds } from "../trace-id.js";
import { traceFromRow, type TraceRow } from "./sqlite-trace-row.js";
import { dayMs } from "./sqlite-usage-rollup.js";

/** Filter columns, the same in the traces table and both roll-ups. */
const filterColumns = [
  ["keyId", "key_id"],
  ["provider", "provider"],
  ["model", "model"],
  ["status", "status"],
] as const;

/**
 * The dashboard's reads on the embedded store. Pages use the (account, [filter column,]
 * received_at) indexes with a keyset cursor, so a deep page costs what the first one does.
 * Aggregates read whole UTC days from the daily roll-ups and only the partial days at either
 * end of the range from the traces themselves.
 */
export function sqliteTraceReader(db: Database.Database, retentionMs: number, ids: ReturnType<typeof sequenceIds>): TraceReader {
  const statements = new Map<string, Database.Statement>();
  /** Statements are built per combination of filters, so SQLite picks the index for the filters given. */
  const prepare = (sql: string) => {
    let statement = statements.get(sql);
    if (!statement) statements.set(sql, (statement = db.prepare(sql)));
    return statement;
  };

  const where = (filter: ResolvedTraceFilter, params: Record<string, unknown>): string =>
    filterColumns
      .filter(([field]) => filter[field] !== undefined)
      .map(([field, column]) => {
        params[field] = filter[field];
        return ` AND ${column} = @${field}`;
      })
      .join("");

  const cells = async (accountId: string, filter: ResolvedTraceFilter, grouping: UsageGrouping): Promise<UsageCells> => {
    const dims = [...(grouping.day ? ["day"] : []), ...(grouping.model ? ["provider", "model"] : []), ...(grouping.country ? ["country"] : [])];
    const params: Record<string, unknown> = { account: accountId };
    const filters = where(filter, params);
    const firstDay = Math.ceil(filter.sinceMs / dayMs);
    const endDay = Math.floor(Math.min(filter.untilMs, Date.now() + 2 * dayMs) / dayMs);
    const sums = "SUM(cost_usd) AS costUsd, SUM(tokens_in) AS tokensIn, SUM(tokens_out) AS tokensOut";
    const out: UsageCells = { sums: [], latency: [] };
    const groupBy = (columns: string[]) => (columns.length > 0 ? ` GROUP BY ${columns.join(", ")}` : "");
    const run = <T>(sql: string, extra: Record<string, unknown>) => prepare(sql).all({ ...params, ...extra }) as T[];

    /** Whole days, from the roll-ups. */
    const days = (from: number, to: number) => {
      const range = `WHERE account_id = @account AND day >= @from AND day < @to${filters}`;
      const table = grouping.country ? "usage_country_daily" : "usage_daily";
      if (grouping.sums !== false) {
        out.sums.push(...run<UsageCell>(`SELECT ${[...dims, "status"].join(", ")}, SUM(calls) AS calls, ${sums} FROM ${table} ${range}${groupBy([...dims, "status"])}`, { from, to }));
      }
      if (grouping.latency) {
        // Without a key or status filter, the table summed over them answers with a sixth of the rows.
        const latencyTable = filter.keyId === undefined && filter.status === undefined ? "latency_daily_all" : "latency_daily";
        out.latency.push(...run<LatencyCell>(`SELECT ${[...dims, "bucket"].join(", ")}, SUM(calls) AS calls FROM ${latencyTable} ${range}${groupBy([...dims, "bucket"])}`, { from, to }));
      }
    };
    /** Part of a day, from the traces. */
    const traces = (from: number, to: number) => {
      if (from >= to) return;
      const column = (d: string) => (d === "day" ? "received_at / 86400000 AS day" : d === "bucket" ? "latency_bucket(latency_ms) AS bucket" : d);
      const range = `WHERE account_id = @account AND received_at >= @from AND received_at < @to${filters}`;
      if (grouping.sums !== false) {
        out.sums.push(...run<UsageCell>(`SELECT ${[...dims, "status"].map(column).join(", ")}, COUNT(*) AS calls, ${sums} FROM traces ${range}${groupBy([...dims, "status"])}`, { from, to }));
      }
      if (grouping.latency) {
        out.latency.push(...run<LatencyCell>(`SELECT ${[...dims, "bucket"].map(column).join(", ")}, COUNT(*) AS calls FROM traces ${range}${groupBy([...dims, "bucket"])}`, { from, to }));
      }
    };

    if (firstDay < endDay) {
      days(firstDay, endDay);
      traces(filter.sinceMs, firstDay * dayMs);
      traces(endDay * dayMs, filter.untilMs);
    } else {
      traces(filter.sinceMs, filter.untilMs);
    }
    if (grouping.day) {
      for (const cell of [...out.sums, ...out.latency]) cell.day = new Date(Number(cell.day) * dayMs).toISOString().slice(0, 10);
    }
    return out;
  };

  return {
    ...usageReader(cells, retentionMs),
    async listTraces(accountId, traceFilter, page) {
      const filter = resolveTraceFilter(traceFilter, retentionMs);
      const params: Record<string, unknown> = { account: accountId, since: filter.sinceMs, until: filter.untilMs, limit: clampPageSize(page.pageSize) + 1 };
      let after = "";
      if (page.cursor) {
        const cursor = decodeTraceCursor(page.cursor);
        const seq = ids.seqOf(cursor.id);
        if (seq === undefined) throw new InvalidCursorError();
        // The cursor tightens the one upper bound SQLite uses for the index range (given two, it
        // would range over one and filter by the other, row by row); the OR only sorts out rows
        // sharing the cursor's instant.
        params.until = Math.min(filter.untilMs, cursor.receivedAtMs + 1);
        after = " AND (received_at < @at OR seq < @seq)";
        Object.assign(params, { at: cursor.receivedAtMs, seq });
      }
      const sql = `SELECT * FROM traces WHERE account_id = @account AND received_at >= @since AND received_at < @until${where(filter, params)}${after}
        ORDER BY received_at DESC, seq DESC LIMIT @limit`;
      const rows = prepare(sql).all(params) as TraceRow[];
      const more = rows.length === params.limit;
      if (more) rows.pop();
      const last = rows[rows.length - 1];
      return create(TracePageSchema, {
        traces: rows.map((row) => traceFromRow(row, ids.idOf(row.seq))),
        nextCursor: more && last ? encodeTraceCursor({ receivedAtMs: last.received_at, id: ids.idOf(last.seq) }) : "",
      });
    },
  };
}
