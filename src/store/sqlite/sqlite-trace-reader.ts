import type Database from "better-sqlite3";
import { create } from "@bufbuild/protobuf";
import { TracePageSchema } from "../../../gen/calltrace/v1/query_pb.js";
import { PriceCheck } from "../../../gen/calltrace/v1/trace_pb.js";
import { dimensionName } from "../group-dimension.js";
import { latencyBucketSql } from "../latency-bucket.js";
import { clampPageSize, decodeTraceCursor, encodeTraceCursor, InvalidCursorError, newestFirst } from "../trace-cursor.js";
import type { sequenceIds } from "../trace-id.js";
import { readCutoffMs } from "../retention.js";
import { filtersAttributes, resolveTraceFilter, type ResolvedTraceFilter } from "../trace-filter.js";
import type { TraceReader } from "../trace-reader.js";
import { hourMs, usageReader, type LatencyCell, type UsageCell, type UsageCells, type UsageGrouping } from "../usage-reader.js";
import { otherValue } from "../value-cap.js";
import { sqliteErrorReader } from "./sqlite-error-reader.js";
import { sqliteRunReader } from "./sqlite-run-reader.js";
import { groupExpression, projectIs, traceConditions, tracesFor } from "./sqlite-trace-filter.js";
import { idOf, numberOf } from "./sqlite-id-numbers.js";
import { traceFromRow, traceRowSql, type TraceRow } from "./sqlite-trace-row.js";
import { dayMs } from "./sqlite-usage-rollup.js";
import { metadataSet, setGroupsSql, tagSet, type AttributeSet } from "./sqlite-attribute-sets.js";
import { bucketsSql, dayIn, hoursSql, rankedGroupsSql, untrackedDaysSql } from "./sqlite-rollup-sql.js";

/** A call's latency bucket in SQL, built once: a statement per filter combination embeds it. */
const bucketOfLatency = latencyBucketSql("latency_ms");

/** The sort expressions of the orders other than time; each has an index (project_num, expression), whose entries end with the rowid, seq (D87). */
const sortExpressions = { cost: "cost_usd", latency: "latency_ms", tokens: "(tokens_in + tokens_out)" } as const;

/**
 * Most traces an attribute group-by reads in the part of a day at either end of its range; past
 * it, that part's whole UTC day is read from the roll-ups (the answer says so: `wholeDays`). A
 * trace has one value of most attributes but up to 20 tags or 32 metadata keys, each a row of a
 * JSON join: 15,000 traces of 8 tags took 3 s at load 20, their users 0.2 s (bench/storage.ts).
 */
export const maxPartTraces = { single: 20_000, list: 2_500 } as const;

/**
 * Most values of group_daily read by a seek per day each; more (a ranking's candidates, when the
 * partial days hold thousands of values: a seek per value and day) read the range's rows instead.
 */
const seekValuesMax = 1_000;

/** The traces table's columns of the dimensions it stores by number (D65, D68). */
const numberedDims: Partial<Record<string, string>> = { provider: "provider_num", model: "model_num" };
const numberedGroups: Partial<Record<string, string>> = { ...numberedDims, key: "key_num" };
/**
 * A number as a GROUP BY term: the unary `+` keeps SQLite from walking a (project, number, ...)
 * index over every call of the project, to group in its order, in place of the range's index.
 */
export const groupedNumber = (column: string) => `+${column}`;

/**
 * A trace's status from its flag, as the table's virtual `status` column reads it: grouped by
 * `failed`, a read of a covering index (the user's, D82) needs no table row.
 */
export const statusOfFailed = "CASE failed WHEN 1 THEN 'error' ELSE 'success' END";

/** The dimensions the roll-ups of key, provider and model (usage_daily and its kin) hold as columns. */
const rollupColumns: Partial<Record<string, string>> = { key: "key_id", provider: "provider", model: "model" };

/**
 * A trace's value of an attribute as the roll-ups count it (D54): the value if its day's roll-up
 * rows hold it (tracked), else the other value. The roll-ups are written in the traces'
 * transaction, so they hold every tracked value of every stored trace, in the row of the trace's
 * own status: one point of group_daily's key per trace and value (D67), not every status and day
 * of the value.
 */
export function cappedExpression(
  value: string,
  dimension: string,
  params: Record<string, unknown>,
  call: { status: string; day: string } = { status: "traces.status", day: `traces.received_at / ${dayMs}` },
): string {
  params.cappedDimension = dimension;
  params.otherValue = otherValue;
  return `(CASE WHEN ${value} = '' OR EXISTS (SELECT 1 FROM group_daily AS tracked WHERE tracked.${projectIs}
    AND tracked.dimension = @cappedDimension AND tracked.value = ${value} AND tracked.status = ${call.status}
    AND tracked.day = ${call.day})
    THEN ${value} ELSE @otherValue END)`;
}

/** The columns a pass over calls grouped by tag or metadata set (D83, D86) keeps for the capped check of their values: each group's status and day. */
export const setCall = { status: "call_status", day: "call_day" };

/** The dimensions read over numbered sets (D83, D86), and their sets. */
const setOf: Partial<Record<string, AttributeSet>> = { tag: tagSet, metadata: metadataSet, metadataKey: metadataSet };

/**
 * Whether the days of [from, to) counted a value of `group` under other (D54), in group_daily's
 * rows of the other value; a metadata value also when its key was (it then keeps no value). If
 * not, every trace's value is its own and needs no lookup.
 */
export const countedOtherSql = `SELECT 1 FROM group_daily WHERE ${projectIs} AND dimension IN (SELECT value FROM json_each(@dimensions))
  AND value = @otherValue AND ${dayIn("@fromDay", "@lastDay + 1")} LIMIT 1`;

/** The switches of the embedded store's fast reads, each with a differential test. */
export interface TraceReadOptions {
  /** GROUP_RANK_IN_SQL: false reads every group's sums into JavaScript, which ranks them. */
  groupRankInSql?: boolean;
  /** ATTRIBUTE_SETS_READ: false groups tags and metadata by each call's JSON, not by its set's number (D83, D86). */
  attributeSetsRead?: boolean;
}

/**
 * The dashboard's reads on the embedded store. Pages use the (account, [filter column,]
 * received_at) indexes with a keyset cursor, so a deep page costs what the first one does; other
 * orders use the (account, cost | latency | tokens, seq) indexes the same way. Aggregates read
 * whole UTC days from the daily roll-ups, the whole hours of the partial days at either end of the
 * range (and hourly trends) from usage_hourly, and only the parts of an hour at the range's ends
 * from the traces themselves; a filter the roll-ups do not hold (user, tag, ...) reads traces.
 */
export function sqliteTraceReader(
  db: Database.Database,
  retentionMs: number,
  ids: ReturnType<typeof sequenceIds>,
  options: TraceReadOptions = {},
): TraceReader {
  const statements = new Map<string, Database.Statement>();
  /** Statements are built per combination of filters, so SQLite picks the index for the filters given. */
  const prepare = (sql: string) => {
    let statement = statements.get(sql);
    if (!statement) statements.set(sql, (statement = db.prepare(sql)));
    return statement;
  };

  const countTraces = db
    .prepare(`SELECT COUNT(*) FROM traces WHERE project_num = ${numberOf("?")} AND received_at >= ? AND received_at < ?`)
    .pluck();
  const tracesBetween = (accountId: string, from: number, to: number) => countTraces.get(accountId, from, to) as number;

  const cells = async (accountId: string, filter: ResolvedTraceFilter, grouping: UsageGrouping): Promise<UsageCells> => {
    const dims = [
      ...(grouping.day ? ["day"] : []),
      ...(grouping.hour ? ["hour"] : []),
      ...(grouping.model ? ["provider", "model"] : []),
      ...(grouping.country ? ["country"] : []),
    ];
    const sums = "SUM(cost_usd) AS costUsd, SUM(tokens_in) AS tokensIn, SUM(tokens_out) AS tokensOut";
    // The roll-ups keep these counts; the traces have the check itself.
    const rolledChecks = ", SUM(unpriced) AS unpriced, SUM(mismatched) AS mismatched";
    const tracedChecks = `, SUM(price_check = ${PriceCheck.UNPRICED}) AS unpriced, SUM(price_check = ${PriceCheck.MISMATCH}) AS mismatched`;
    const out: UsageCells = { sums: [], latency: [] };
    const groupBy = (columns: string[]) => (columns.length > 0 ? ` GROUP BY ${columns.join(", ")}` : "");
    const run = <T>(sql: string, params: Record<string, unknown>) => prepare(sql).all(params) as T[];
    // Not push(...rows): a call's arguments live on the stack, which 200,000 groups overflow.
    const append = <T>(into: T[], rows: T[]) => {
      for (const row of rows) into.push(row);
    };
    const group = grouping.group;
    const values = grouping.groupValues;
    const rollupColumn = group && rollupColumns[group.kind];
    // The roll-ups of one attribute (group_daily) know days and statuses only.
    const attributeRollup = group !== undefined && rollupColumn === undefined;
    const usageFiltered = filter.keyId !== undefined || filter.provider !== undefined || filter.model !== undefined;
    // An environment with the filters and groupings of usage_daily but the country: usage_environment_daily holds them (D67).
    const environmentRollup = filter.environment !== undefined && !grouping.country && (group === undefined || rollupColumn !== undefined);
    // A model name match is a filter of the model, which the roll-ups of provider and model hold.
    const usageOnly = !filtersAttributes({ ...filter, modelContains: undefined, environment: undefined });
    // usage_hourly (D73) holds what usage_environment_daily does, for every environment, per hour:
    // the hourly trends and the parts of a day at the range's ends.
    const hourlyRollup = usageOnly && !grouping.country && (group === undefined || rollupColumn !== undefined);
    // A user's whole days by day and status alone (the Overview's totals, trend and latency) are
    // group_daily's rows of the user, where the day tracked it (D82): not a pass over its calls.
    const userRollup =
      filter.userId !== undefined &&
      !filtersAttributes({ ...filter, userId: undefined }) &&
      !usageFiltered &&
      group === undefined &&
      !grouping.model &&
      !grouping.country &&
      !grouping.hour;
    /** The value whose untracked days (D54) the roll-ups cannot answer: the filter's environment or user. */
    const trackedValue = userRollup ? { dimension: "user", value: filter.userId } : { dimension: "environment", value: filter.environment };
    // The top groups ranked in SQL (UsageGrouping's `top`): sums of a group and its statuses only.
    const ranking =
      options.groupRankInSql !== false &&
      grouping.top !== undefined &&
      grouping.top > 0 &&
      values === undefined &&
      dims.length === 0 &&
      !grouping.latency &&
      grouping.sums !== false;
    const rollups =
      userRollup ||
      (!grouping.hour &&
        usageOnly &&
        (filter.environment === undefined || environmentRollup) &&
        !(attributeRollup && (grouping.country || grouping.model || usageFiltered || filter.modelContains !== undefined)));
    // The few groups of a key, provider or model, read from the traces alone (under a user, ...):
    // every group's latency in the pass that sums them, not in a second pass for the top ones (D82).
    const latencyWithSums =
      grouping.top !== undefined && group !== undefined && numberedGroups[group.kind] !== undefined && !rollups && !hourlyRollup;

    /** Whole days that counted the filter's environment or user under other (D54): the roll-ups do not hold it there. */
    let untracked: number[] = [];
    const untrackedDays = (from: number, to: number) =>
      prepare(untrackedDaysSql)
        .pluck()
        .all({ account: accountId, otherValue, ...trackedValue, from, to }) as number[];

    /** Whole days, from the roll-ups. */
    const days = (from: number, to: number) => {
      const params: Record<string, unknown> = { account: accountId, from, to };
      // group_daily names the project by number, the other roll-ups by id.
      const project = attributeRollup || userRollup ? projectIs : "account_id = @account";
      let conditions = traceConditions(filter, params, "rollup");
      let grp: string[] = [];
      if (environmentRollup) {
        Object.assign(params, { environment: filter.environment, untracked: JSON.stringify(untracked) });
        conditions += " AND environment = @environment AND day NOT IN (SELECT value FROM json_each(@untracked))";
      }
      if (userRollup) {
        Object.assign(params, { ...trackedValue, untracked: JSON.stringify(untracked) });
        conditions += " AND dimension = @dimension AND value = @value AND day NOT IN (SELECT value FROM json_each(@untracked))";
      }
      const column = attributeRollup ? "value" : rollupColumn;
      if (group && attributeRollup) {
        params.dimension = dimensionName(group);
        conditions += " AND dimension = @dimension";
      }
      if (group && column) grp = [`${column} AS "group"`];
      // The two roll-ups that keep calls per latency bucket on the row, else usage_daily's kin.
      const bucketsTable = attributeRollup || userRollup ? "group_daily" : environmentRollup ? "usage_environment_daily" : undefined;
      const usageTable = bucketsTable ?? (grouping.country ? "usage_country_daily" : "usage_daily");
      let wanted = values;
      const ranked = ranking && column !== undefined;
      if (ranking && column) {
        // Exact (D80): the values summed so far (the partial days', the group without a metadata
        // key) are ranked with what they cost there (D82), so every value is ranked by its whole
        // cost, and only the top ones are summed: the others' partial sums are dropped.
        if (group?.kind === "metadata") withoutMetadataKey(group.key, from, to);
        const seen = new Map<string, number>();
        for (const c of out.sums) seen.set(c.group ?? "", (seen.get(c.group ?? "") ?? 0) + c.costUsd);
        const top = run<{ group: string; groups: number }>(
          rankedGroupsSql(usageTable, column, `WHERE ${project} AND day >= @from AND day < @to${conditions}`),
          { ...params, seen: JSON.stringify([...seen]), top: grouping.top },
        );
        out.totalGroups = top[0]?.groups ?? 0;
        wanted = top.map((g) => g.group);
        const kept = new Set(wanted);
        out.sums = out.sums.filter((c) => kept.has(c.group ?? ""));
      }
      // A few values of group_daily are read day by day (its key: day, then value); else a range of days.
      const inDays =
        userRollup || (attributeRollup && wanted && wanted.length <= seekValuesMax) ? dayIn("@from", "@to") : "day >= @from AND day < @to";
      let range = `WHERE ${project} AND ${inDays}${conditions}`;
      if (wanted && column) {
        params.values = JSON.stringify(wanted);
        range += ` AND ${column} IN (SELECT value FROM json_each(@values))`;
      }
      const keys = (extra: string) => [...dims, ...grp.map(() => `"group"`), extra];
      const select = (extra: string) => [...dims, ...grp, extra].join(", ");
      if (grouping.sums !== false) {
        append(
          out.sums,
          run<UsageCell>(
            `SELECT ${select("status")}, SUM(calls) AS calls, ${sums}${rolledChecks} FROM ${usageTable} ${range}${groupBy(keys("status"))}`,
            params,
          ),
        );
      }
      // Without a key or status filter, the tables summed over them answer with a sixth of the rows,
      // a row per bucket (D76): under an environment too.
      const overKeysAndStatuses = filter.keyId === undefined && filter.status === undefined && group?.kind !== "key";
      const latencyTable = !overKeysAndStatuses ? "latency_daily" : environmentRollup ? "latency_environment_daily" : "latency_daily_all";
      if (grouping.latency) {
        append(
          out.latency,
          run<LatencyCell>(
            bucketsTable && !(environmentRollup && overKeysAndStatuses)
              ? bucketsSql(bucketsTable, [...dims, ...grp], [...dims, ...grp.map(() => `"group"`)], range)
              : `SELECT ${select("bucket")}, SUM(calls) AS calls FROM ${latencyTable} ${range}${groupBy(keys("bucket"))}`,
            params,
          ),
        );
      }
      if (group?.kind === "metadata" && !ranked && (!values || values.includes(""))) withoutMetadataKey(group.key, from, to);
    };

    /**
     * The group of traces without a metadata key, on whole days: all traces less those that have
     * the key (the roll-ups count, per key, the traces that carry it).
     */
    const withoutMetadataKey = (key: string, from: number, to: number) => {
      const params: Record<string, unknown> = { account: accountId, from, to, key };
      const conditions = traceConditions(filter, params, "rollup");
      const inRange = `day >= @from AND day < @to${conditions}`;
      const range = `WHERE account_id = @account AND ${inRange}`;
      const having = `WHERE ${projectIs} AND ${dayIn("@from", "@to")}${conditions} AND dimension = 'metadataKey' AND value = @key`;
      const subtract = <T extends UsageCell | LatencyCell>(all: T[], present: T[], extra: "status" | "bucket", fields: (keyof T)[]) => {
        const id = (c: T) => JSON.stringify([...dims.map((d) => c[d as keyof T]), c[extra as keyof T]]);
        const less = new Map(present.map((c) => [id(c), c]));
        for (const cell of all) {
          const minus = less.get(id(cell));
          for (const f of fields) (cell[f] as number) -= minus ? (minus[f] as number) : 0;
          if ((cell as { calls: number }).calls > 0) (extra === "status" ? out.sums : out.latency).push({ ...cell, group: "" } as never);
        }
      };
      const select = (extra: string) => [...dims, extra].join(", ");
      if (grouping.sums !== false) {
        const q = (table: string, where: string) =>
          run<UsageCell>(
            `SELECT ${select("status")}, SUM(calls) AS calls, ${sums}${rolledChecks} FROM ${table} ${where}${groupBy([...dims, "status"])}`,
            params,
          );
        subtract(q("usage_daily", range), q("group_daily", having), "status", [
          "calls",
          "costUsd",
          "tokensIn",
          "tokensOut",
          "unpriced",
          "mismatched",
        ]);
      }
      if (grouping.latency) {
        const all = run<LatencyCell>(
          `SELECT ${select("bucket")}, SUM(calls) AS calls FROM ${filter.status === undefined ? "latency_daily_all" : "latency_daily"} ${range}${groupBy([...dims, "bucket"])}`,
          params,
        );
        subtract(all, run<LatencyCell>(bucketsSql("group_daily", dims, dims, having), params), "bucket", ["calls"]);
      }
    };

    /** Whole hours [from, to) (hours since the epoch), from usage_hourly; under an environment, its untracked days from the traces. */
    const hours = (from: number, to: number) => {
      const params: Record<string, unknown> = { account: accountId, from, to };
      let where = `WHERE account_id = @account AND hour >= @from AND hour < @to${traceConditions(filter, params, "rollup")}`;
      if (filter.environment !== undefined) {
        const skipped = untrackedDays(Math.floor(from / 24), Math.ceil(to / 24));
        for (const day of skipped) traces(Math.max(day * dayMs, from * hourMs), Math.min((day + 1) * dayMs, to * hourMs));
        Object.assign(params, { environment: filter.environment, untracked: JSON.stringify(skipped) });
        where += " AND environment = @environment AND hour / 24 NOT IN (SELECT value FROM json_each(@untracked))";
      }
      const grp = rollupColumn ? [`${rollupColumn} AS "group"`] : [];
      if (values && rollupColumn) {
        params.values = JSON.stringify(values);
        where += ` AND ${rollupColumn} IN (SELECT value FROM json_each(@values))`;
      }
      const sql = hoursSql(dims, grp, where, { sums: grouping.sums !== false, latency: grouping.latency === true });
      if (sql.sums) append(out.sums, run<UsageCell>(sql.sums, params));
      if (sql.latency) append(out.latency, run<LatencyCell>(sql.latency, params));
    };

    /** Part of a range: its whole hours from usage_hourly when it holds the filter, the rest from the traces. */
    const part = (from: number, to: number) => {
      const firstHour = Math.ceil(from / hourMs);
      // No hour past the writer's clock bound holds a trace (D43's few minutes): the rest of an open range is read as traces, of which there are none.
      const endHour = Math.floor(Math.min(to, Date.now() + dayMs) / hourMs);
      if (!hourlyRollup || firstHour >= endHour) return traces(from, to);
      traces(from, firstHour * hourMs);
      hours(firstHour, endHour);
      traces(endHour * hourMs, to);
    };

    /** Part of a day (or any range, when the roll-ups cannot answer), from the traces. */
    const traces = (from: number, to: number) => {
      if (from >= to) return;
      const params: Record<string, unknown> = { account: accountId, from, to };
      const column = (d: string) =>
        d === "day"
          ? "received_at / 86400000 AS day"
          : d === "hour"
            ? "received_at / 3600000 AS hour"
            : d === "bucket"
              ? `${bucketOfLatency} AS bucket`
              : d === "status"
                ? `${statusOfFailed} AS status`
                : d in numberedDims
                  ? `${idOf(numberedDims[d]!)} AS ${d}`
                  : d;
      const inRange = `WHERE ${projectIs} AND received_at >= @from AND received_at < @to${traceConditions(filter, params)}`;
      let range = inRange;
      let join = "";
      const grp: string[] = [];
      // A key, provider or model is grouped by its number, its id read once per group.
      let groupKey = `"group"`;
      /** A tag's or metadata's group over the calls numbered by set (D83, D86), when read so: the value read from the set's JSON, capped if the days counted other. */
      let setRead: { set: AttributeSet; group: { value: string; join: string }; capped: boolean } | undefined;
      if (group) {
        const expression = groupExpression(group, params);
        join = expression.join;
        const dimension = dimensionName(group);
        const countedOther =
          attributeRollup &&
          prepare(countedOtherSql).get({
            account: accountId,
            dimensions: JSON.stringify(group.kind === "metadata" ? [dimension, "metadataKey"] : [dimension]),
            otherValue,
            fromDay: Math.floor(from / dayMs),
            lastDay: Math.floor((to - 1) / dayMs),
          }) !== undefined;
        const value = countedOther ? cappedExpression(expression.value, dimension, params) : expression.value;
        grp.push(`${value} AS "group"`);
        const numbered = numberedGroups[group.kind];
        if (numbered) groupKey = groupedNumber(numbered);
        if (values) {
          params.values = JSON.stringify(values);
          range += numbered
            ? ` AND ${numbered} IN (SELECT num FROM id_numbers WHERE id IN (SELECT value FROM json_each(@values)))`
            : ` AND ${value} IN (SELECT value FROM json_each(@values))`;
        }
        const set = options.attributeSetsRead !== false ? setOf[group.kind] : undefined;
        if (set) {
          const ofSet = groupExpression(group, params, set.table);
          setRead = {
            set,
            group: countedOther ? { value: cappedExpression(ofSet.value, dimension, params, setCall), join: ofSet.join } : ofSet,
            capped: countedOther,
          };
        }
      }
      const withSums = grouping.sums !== false;
      // One pass for both (D82): each row, a group's calls of one status in one bucket, is a cell of
      // each list (every reader of cells sums them per group), so the calls are read once, not once
      // for the sums and again for the latency.
      const both = withSums && (grouping.latency === true || latencyWithSums);
      const extra = both ? ["status", "bucket"] : withSums ? ["status"] : grouping.latency ? ["bucket"] : [];
      if (extra.length === 0) return;
      // Grouped by the numbers, each group's id read once.
      const dimKeys = dims.map((d) => (d in numberedDims ? groupedNumber(numberedDims[d]!) : d));
      const extraKeys = extra.map((e) => (e === "status" ? "failed" : e));
      const selected = [...dims.map(column), ...grp, ...extra.map(column)].join(", ");
      const counts = `COUNT(*) AS calls${withSums ? `, ${sums}${tracedChecks}` : ""}`;
      const callsSql = (where: string) =>
        `SELECT ${selected}, ${counts} FROM ${tracesFor(filter)}${join} ${where}${groupBy([...dimKeys, ...grp.map(() => groupKey), ...extraKeys])}`;
      let rows: (UsageCell & LatencyCell)[];
      if (!setRead) {
        rows = run(callsSql(range), params);
      } else {
        // The calls numbered by set grouped by their set, in one range of the index that holds the
        // number (a user's); the rest (stored before D83 or D86, or past the bound) by their JSON.
        const { set } = setRead;
        rows = run(callsSql(`${range} AND ${set.num} IS NULL`), params);
        const setKeys = [...dimKeys, ...extraKeys, set.num];
        const setColumns = [...dims.map(column), ...extra.map(column), set.num];
        if (setRead.capped) {
          setKeys.push("failed", setCall.day);
          setColumns.push(`${statusOfFailed} AS ${setCall.status}`, `received_at / ${dayMs} AS ${setCall.day}`);
        }
        const bySet = `SELECT ${setColumns.join(", ")}, ${counts} FROM ${tracesFor(filter)} ${inRange} AND ${set.num} IS NOT NULL GROUP BY ${setKeys.join(", ")}`;
        const measures = ["calls", ...(withSums ? ["costUsd", "tokensIn", "tokensOut", "unpriced", "mismatched"] : [])];
        append(rows, run(setGroupsSql(set, bySet, setRead.group, [...dims, ...extra], measures, values !== undefined), params));
      }
      if (withSums) append(out.sums, rows);
      if (extra.includes("bucket")) append(out.latency, rows);
      if (both) out.latencyOfEveryGroup = latencyWithSums;
    };

    const firstDay = Math.ceil(filter.sinceMs / dayMs);
    const endDay = Math.floor(Math.min(filter.untilMs, Date.now() + 2 * dayMs) / dayMs);
    if (rollups && (firstDay < endDay || attributeRollup)) {
      // The parts of a day at either end (one part, when the range holds no whole day).
      const parts: [number, number][] =
        firstDay < endDay
          ? [
              [filter.sinceMs, firstDay * dayMs],
              [endDay * dayMs, filter.untilMs],
            ]
          : [[filter.sinceMs, filter.untilMs]];
      let [from, to] = [firstDay, endDay];
      for (const [start, end] of parts) {
        if (start >= end) continue;
        // An attribute's values are read from too many traces to answer in time: its whole days instead (D54).
        const most = group?.kind === "tag" || group?.kind === "metadataKey" ? maxPartTraces.list : maxPartTraces.single;
        if (attributeRollup && tracesBetween(accountId, start, end) > most) {
          from = Math.min(from, Math.floor(start / dayMs));
          to = Math.max(to, Math.ceil(end / dayMs));
          out.wholeDays = true;
        } else {
          part(start, end);
        }
      }
      if (environmentRollup || userRollup) {
        // Days whose values passed the bound count this one under other if it was not tracked: those days come from the traces.
        untracked = untrackedDays(from, to);
        for (const day of untracked) traces(day * dayMs, (day + 1) * dayMs);
      }
      if (from < to) days(from, to);
    } else {
      part(filter.sinceMs, filter.untilMs);
    }
    // A cell of both lists (a pass read both) is converted once.
    const converted = new Set([...out.sums, ...out.latency]);
    if (grouping.day) for (const cell of converted) cell.day = new Date(Number(cell.day) * dayMs).toISOString().slice(0, 10);
    if (grouping.hour) for (const cell of converted) cell.hour = Number(cell.hour) * hourMs;
    return out;
  };

  return {
    ...usageReader(cells, retentionMs),
    ...sqliteErrorReader(db, retentionMs),
    ...sqliteRunReader(db, retentionMs, ids),
    async listTraces(accountId, traceFilter, page) {
      const filter = resolveTraceFilter(traceFilter, retentionMs);
      const sort = page.sort ?? newestFirst;
      const direction = sort.ascending ? "ASC" : "DESC";
      const params: Record<string, unknown> = {
        account: accountId,
        since: filter.sinceMs,
        until: filter.untilMs,
        limit: clampPageSize(page.pageSize) + 1,
      };
      const conditions = traceConditions(filter, params);
      const cursor = page.cursor ? decodeTraceCursor(page.cursor, sort) : undefined;
      const seq = cursor && ids.seqOf(cursor.id);
      if (cursor && seq === undefined) throw new InvalidCursorError();
      let sql: string;
      if (sort.order === "time") {
        let after = "";
        if (cursor) {
          // The cursor tightens the one bound SQLite uses for the index range (given two, it
          // would range over one and filter by the other, row by row); the OR only sorts out rows
          // sharing the cursor's instant.
          if (sort.ascending) params.since = Math.max(filter.sinceMs, cursor.value);
          else params.until = Math.min(filter.untilMs, cursor.value + 1);
          after = ` AND (received_at ${sort.ascending ? ">" : "<"} @at OR seq ${sort.ascending ? ">" : "<"} @seq)`;
          Object.assign(params, { at: cursor.value, seq });
        }
        sql = `SELECT ${traceRowSql} FROM ${tracesFor(filter)} WHERE ${projectIs} AND received_at >= @since AND received_at < @until${conditions}${after}
          ORDER BY received_at ${direction}, seq ${direction} LIMIT @limit`;
      } else {
        const by = sortExpressions[sort.order];
        let after = "";
        if (cursor) {
          after = ` AND (${by}, seq) ${sort.ascending ? ">" : "<"} (@at, @seq)`;
          Object.assign(params, { at: cursor.value, seq });
        }
        // The unary + keeps SQLite from ranging over received_at: the sort's own index reads the
        // first page in order, where a time range would sort every trace of the period first.
        // An equality filter on an indexed column (user, session, key, ...) still narrows first.
        sql = `SELECT ${traceRowSql} FROM ${tracesFor(filter)} WHERE ${projectIs} AND +received_at >= @since AND +received_at < @until${conditions}${after}
          ORDER BY ${by} ${direction}, seq ${direction} LIMIT @limit`;
      }
      const rows = prepare(sql).all(params) as TraceRow[];
      const more = rows.length === params.limit;
      if (more) rows.pop();
      const last = rows[rows.length - 1];
      const sortValue = (row: TraceRow) =>
        ({ time: row.received_at, cost: row.cost_usd, latency: row.latency_ms, tokens: row.tokens_in + row.tokens_out })[sort.order];
      return create(TracePageSchema, {
        traces: rows.map((row) => traceFromRow(row, ids.idOf(row.seq))),
        nextCursor: more && last ? encodeTraceCursor({ value: sortValue(last), id: ids.idOf(last.seq) }, sort) : "",
      });
    },
    async getTrace(accountId, id, keptSinceMs) {
      const seq = ids.seqOf(id);
      if (seq === undefined) return undefined;
      const cutoff = readCutoffMs(retentionMs, keptSinceMs);
      const row = prepare(`SELECT ${traceRowSql} FROM traces WHERE seq = ? AND project_num = ${numberOf("?")} AND received_at >= ?`).get(
        seq,
        accountId,
        cutoff,
      ) as TraceRow | undefined;
      return row && traceFromRow(row, id);
    },
  };
}
