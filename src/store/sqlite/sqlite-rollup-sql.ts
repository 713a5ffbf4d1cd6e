import { projectIs } from "./sqlite-trace-filter.js";

/**
 * Calls per latency bucket of the rows of `table` (group_daily, usage_environment_daily or
 * usage_hourly) `where` selects, summed by `names`: each row keeps its buckets as a JSON object
 * (D65), read here as rows. `columns` are the inner select's (an alias each, as `names` call them).
 */
export function bucketsSql(table: string, columns: string[], names: string[], where: string): string {
  return `SELECT ${[...names, "CAST(b.key AS INTEGER) AS bucket"].join(", ")}, SUM(b.value) AS calls
    FROM (SELECT ${[...columns, "latency"].join(", ")} FROM ${table} ${where}) AS g, json_each(g.latency) AS b
    GROUP BY ${[...names, "bucket"].join(", ")}`;
}

/**
 * `day` is one of the days in [from, to) that @account has usage on, as a list: group_daily's key
 * puts the day before the value (D78), so a read of one value (or a few) seeks each day's entry,
 * where a range of days would walk every value of those days. The list runs from the first stored
 * day to the last (each a seek of usage_daily's key), so a range without bounds stays short.
 */
export function dayIn(from: string, to: string): string {
  return `day IN (WITH RECURSIVE b(lo, hi) AS (SELECT max(${from}, (SELECT MIN(day) FROM usage_daily WHERE account_id = @account)),
      min(${to}, (SELECT MAX(day) FROM usage_daily WHERE account_id = @account) + 1)),
    d(n) AS (SELECT lo FROM b WHERE lo < hi UNION ALL SELECT n + 1 FROM d, b WHERE n + 1 < hi)
    SELECT n FROM d)`;
}

/**
 * The days in [@from, @to) whose values of @dimension (an environment, a user) passed the bound
 * (D54) without tracking @value: they counted it under other, so the roll-ups do not hold it there.
 */
export const untrackedDaysSql = `SELECT DISTINCT day FROM group_daily AS o WHERE ${projectIs} AND dimension = @dimension AND value = @otherValue
  AND ${dayIn("@from", "@to")} AND NOT EXISTS (SELECT 1 FROM group_daily AS t WHERE t.project_num = o.project_num
  AND t.dimension = @dimension AND t.value = @value AND t.day = o.day)`;

/** usage_hourly's columns of the dimensions a usage query groups by (usage-reader.ts's UsageGrouping). */
const hourlyColumns: Record<string, string> = { day: "hour / 24 AS day", hour: "hour", provider: "provider", model: "model" };

/**
 * The sums per status and the calls per latency bucket of usage_hourly's rows `where` selects,
 * grouped by `dims` (day, hour, provider, model) and `group` (one roll-up column as "group").
 */
export function hoursSql(dims: string[], group: string[], where: string, want: { sums: boolean; latency: boolean }): { sums?: string; latency?: string } {
  const columns = [...dims.map((d) => hourlyColumns[d] ?? d), ...group];
  const names = [...dims, ...group.map(() => `"group"`)];
  return {
    ...(want.sums
      ? {
          sums: `SELECT ${[...columns, "status"].join(", ")}, SUM(calls) AS calls, SUM(cost_usd) AS costUsd, SUM(tokens_in) AS tokensIn,
            SUM(tokens_out) AS tokensOut, SUM(unpriced) AS unpriced, SUM(mismatched) AS mismatched
            FROM usage_hourly ${where} GROUP BY ${[...names, "status"].join(", ")}`,
        }
      : {}),
    ...(want.latency ? { latency: bucketsSql("usage_hourly", columns, names, where) } : {}),
  };
}

/**
 * The top @top values of `column` of the rows of `table` `where` selects, by their summed cost
 * (ties by value), with the count of values (`groups`); @seen's values (JSON pairs of value and
 * cost) are counted and ranked too, with their costs added: the values of a range's partial days,
 * summed elsewhere. Ranked here, every group stays in SQLite: read into JavaScript, each cost about
 * 3 us (bench/RESULTS.md).
 */
export function rankedGroupsSql(table: string, column: string, where: string): string {
  return `SELECT "group", COUNT(*) OVER () AS groups
    FROM (SELECT ${column} AS "group", cost_usd FROM ${table} ${where} UNION ALL SELECT value ->> 0, value ->> 1 FROM json_each(@seen))
    GROUP BY "group" ORDER BY SUM(cost_usd) DESC, "group" LIMIT @top`;
}
