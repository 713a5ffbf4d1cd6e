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
 * The days in [@from, @to) whose environments passed the bound (D54) without tracking
 * @environment: they counted it under other, so the roll-ups do not hold it there.
 */
export const untrackedDaysSql = `SELECT DISTINCT day FROM group_daily AS o WHERE ${projectIs} AND dimension = 'environment' AND value = @otherValue
  AND day >= @from AND day < @to AND NOT EXISTS (SELECT 1 FROM group_daily AS t WHERE t.project_num = o.project_num
  AND t.dimension = 'environment' AND t.value = @environment AND t.day = o.day)`;

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
