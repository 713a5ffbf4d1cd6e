import type Database from "better-sqlite3";
import { errorGroupOf } from "../error-group.js";
import { foldErrorGroups, type ErrorGroupCell, type ErrorValueCell } from "../error-groups-fold.js";
import { filtersAttributes, resolveTraceFilter, type ResolvedTraceFilter } from "../trace-filter.js";
import type { TraceReader } from "../trace-reader.js";
import { idOf } from "./sqlite-id-numbers.js";
import { projectIs, traceConditions } from "./sqlite-trace-filter.js";

const dayMs = 86_400_000;

/**
 * Whether a filter is one the error roll-ups answer: a range, under a key, provider or model (or a
 * model name match), which their rows carry (D70); no other attribute.
 */
function rollupsAnswer(filter: ResolvedTraceFilter): boolean {
  return !filtersAttributes({ ...filter, modelContains: undefined }) && (filter.status === undefined || filter.status === "error");
}

/**
 * The error roll-ups' rows of a filter from day @from to day @to, through their (project, day)
 * key; every row is of failed calls, so a status filter (error) needs no condition.
 */
export function errorRollupWhere(filter: ResolvedTraceFilter, params: Record<string, unknown>): string {
  return `WHERE account_id = @account AND day >= @from AND day < @to${traceConditions({ ...filter, status: undefined }, params, "rollup")}`;
}

/**
 * The failed calls of a filter from @from to @to: `traces ... WHERE ...`. Only failed calls carry a
 * group, so they are read through the index of failed calls, unless a user, session, OTLP trace or
 * group narrows them by its own index: without statistics SQLite would rather range over a key's,
 * provider's or model's calls, most of which succeeded.
 */
export function failedCallsWhere(filter: ResolvedTraceFilter, params: Record<string, unknown>): string {
  const narrower = filter.userId ?? filter.sessionId ?? filter.otlpTraceId ?? filter.errorGroup;
  const index = narrower === undefined ? " INDEXED BY traces_account_error_received" : "";
  return `traces${index} WHERE ${projectIs} AND status = 'error' AND error_group IS NOT NULL
    AND received_at >= @from AND received_at < @to${traceConditions(filter, params)}`;
}

/**
 * GetErrorGroups on the embedded store. Whole UTC days of a range (under a key, provider or model
 * too) are read from the error roll-ups (sqlite-error-rollup.ts); the partial days at either end,
 * and a view under any other filter, from the failed calls through their (project, error group,
 * time) index: never the other calls.
 * `rollups: false` reads every range from the calls (the path the roll-ups are tested against).
 */
export function sqliteErrorReader(
  db: Database.Database,
  retentionMs: number,
  options = { rollups: true },
): Pick<TraceReader, "errorGroups"> {
  const statements = new Map<string, Database.Statement>();
  const prepare = (sql: string) => {
    let statement = statements.get(sql);
    if (!statement) statements.set(sql, (statement = db.prepare(sql)));
    return statement;
  };
  const message = db.prepare(`SELECT message FROM error_groups WHERE account_id = ? AND group_id = ? LIMIT 1`).pluck();

  return {
    async errorGroups(accountId, traceFilter, limit) {
      const filter = resolveTraceFilter(traceFilter, retentionMs);
      const cells: ErrorGroupCell[] = [];
      const values: ErrorValueCell[] = [];
      const samples = new Map<string, string | null>();
      // Not push(...rows): a call's arguments live on the stack, which 200,000 rows overflow.
      const append = <T>(into: T[], rows: T[]) => {
        for (const row of rows) into.push(row);
      };

      const days = (from: number, to: number) => {
        const params: Record<string, unknown> = { account: accountId, from, to };
        const range = errorRollupWhere(filter, params);
        append(
          cells,
          prepare(
            `SELECT group_id AS "group", SUM(calls) AS calls, SUM(cost_usd) AS costUsd, MIN(first_ms) AS firstMs, MAX(last_ms) AS lastMs
             FROM error_group_daily ${range} GROUP BY group_id`,
          ).all(params) as ErrorGroupCell[],
        );
        for (const [dimension, column] of [
          ["model", "model"],
          ["key", "key_id"],
        ] as const) {
          append(
            values,
            prepare(
              `SELECT group_id AS "group", '${dimension}' AS dimension, ${column} AS value, SUM(calls) AS calls
               FROM error_group_daily ${range} GROUP BY group_id, ${column}`,
            ).all(params) as ErrorValueCell[],
          );
        }
        append(
          values,
          prepare(
            `SELECT group_id AS "group", 'user' AS dimension, user_id AS value, SUM(calls) AS calls
             FROM error_group_users ${range} GROUP BY group_id, user_id`,
          ).all(params) as ErrorValueCell[],
        );
      };

      const calls = (from: number, to: number) => {
        if (from >= to) return;
        const params: Record<string, unknown> = { account: accountId, from, to };
        const where = failedCallsWhere(filter, params);
        const rows = prepare(
          `SELECT error_group AS "group", COUNT(*) AS calls, SUM(cost_usd) AS costUsd, MIN(received_at) AS firstMs, MAX(received_at) AS lastMs,
             MIN(error) AS sample FROM ${where} GROUP BY error_group`,
        ).all(params) as (ErrorGroupCell & { sample: string | null })[];
        for (const { sample, ...cell } of rows) {
          cells.push(cell);
          samples.set(cell.group, sample);
        }
        for (const [dimension, column] of [
          ["model", idOf("model_num")],
          ["key", idOf("key_num")],
          ["user", "user_id"],
        ] as const) {
          append(
            values,
            prepare(
              `SELECT error_group AS "group", '${dimension}' AS dimension, ${column} AS value, COUNT(*) AS calls
               FROM ${where} AND ${column} IS NOT NULL GROUP BY error_group, ${column}`,
            ).all(params) as ErrorValueCell[],
          );
        }
      };

      const firstDay = Math.ceil(filter.sinceMs / dayMs);
      const endDay = Math.floor(Math.min(filter.untilMs, Date.now() + 2 * dayMs) / dayMs);
      if (options.rollups && rollupsAnswer(filter) && firstDay < endDay) {
        days(firstDay, endDay);
        calls(filter.sinceMs, firstDay * dayMs);
        calls(endDay * dayMs, filter.untilMs);
      } else {
        calls(filter.sinceMs, filter.untilMs);
      }
      return foldErrorGroups(cells, values, limit, async (groups) => {
        const text = new Map<string, string>();
        for (const group of groups) {
          const named = message.get(accountId, group) as string | undefined;
          text.set(group, named ?? errorGroupOf(samples.get(group)).message);
        }
        return text;
      });
    },
  };
}
