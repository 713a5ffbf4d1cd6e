import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { resolveTraceFilter } from "../../src/store/trace-filter.js";
import { groupExpression, projectIs, traceConditions, tracesFor } from "../../src/store/sqlite/sqlite-trace-filter.js";
import { traceRowSql } from "../../src/store/sqlite/sqlite-trace-row.js";
import { dearRunsSql, runCallsWhere, runCostRankSql } from "../../src/store/sqlite/sqlite-run-reader.js";
import { pendingRunsSql } from "../../src/store/sqlite/sqlite-run-rollup.js";
import { errorRollupWhere, failedCallsWhere } from "../../src/store/sqlite/sqlite-error-reader.js";
import { expiringProjects, openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { cappedExpression, countedOtherSql, groupedNumber, setCall, statusOfFailed } from "../../src/store/sqlite/sqlite-trace-reader.js";
import { metadataSet, setGroupsSql, tagSet } from "../../src/store/sqlite/sqlite-attribute-sets.js";
import { dayIn, rankedGroupsSql, untrackedDaysSql } from "../../src/store/sqlite/sqlite-rollup-sql.js";
import { dimensionName } from "../../src/store/group-dimension.js";
import { create } from "@bufbuild/protobuf";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { tempDir } from "../support/temp-dir.js";

/** The query plan of `sql` on a fresh store's schema, one step a line. */
async function planOf(sql: string): Promise<string> {
  const dir = tempDir();
  await openSqliteStore(dir).close();
  const db = new Database(join(dir, "calltrace.db"), { readonly: true });
  // The function the reads of latency buckets call, as openSqliteStore registers it.
  db.function("latency_bucket", { deterministic: true }, (ms) => ms);
  try {
    // The plan does not depend on the values bound.
    const params = Object.fromEntries([...sql.matchAll(/@(\w+)/g)].map(([, name]) => [name, 1]));
    return (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as { detail: string }[]).map((p) => p.detail).join("\n");
  } finally {
    db.close();
  }
}

/** A page of the Traces view with `init`'s filters, as listTraces asks for it. */
function page(init: Parameters<typeof create<typeof TraceFilterSchema>>[1]): string {
  const params: Record<string, unknown> = {};
  const filter = resolveTraceFilter(create(TraceFilterSchema, init), 0);
  return (
    `SELECT ${traceRowSql} FROM ${tracesFor(filter)} WHERE ${projectIs}` +
    ` AND received_at >= @since AND received_at < @until${traceConditions(filter, params)}
    ORDER BY received_at DESC, seq DESC LIMIT 51`
  );
}

/** A page of the Traces view with `status` as its filter, as listTraces asks for it. */
function statusPage(status: string): string {
  const params: Record<string, unknown> = {};
  const conditions = traceConditions(resolveTraceFilter(create(TraceFilterSchema, { status }), 0), params);
  return `SELECT ${traceRowSql} FROM traces WHERE ${projectIs} AND received_at >= @since AND received_at < @until${conditions}
    ORDER BY received_at DESC, seq DESC LIMIT 51`;
}

// The index cuts of D65 hold only while these reads keep an index: a plan that scans the traces
// table would read every project's rows.
describe("embedded store query plans after the index cuts (D65)", () => {
  it("a page of failed calls reads the index of failed calls, in time order", async () => {
    const plan = await planOf(statusPage("error"));
    expect(plan).toMatch(/USING INDEX traces_account_error_received \(project_num=\? AND received_at>\? AND received_at<\?\)/);
    expect(plan).not.toMatch(/TEMP B-TREE/);
  });

  it("a page of successful calls reads the project's time index (nearly every row matches)", async () => {
    const plan = await planOf(statusPage("success"));
    expect(plan).toMatch(/USING INDEX traces_account_received \(project_num=\? AND received_at>\? AND received_at<\?\)/);
    expect(plan).not.toMatch(/TEMP B-TREE/);
  });

  it("a page of one user's failed calls reads that user's index, and of an error group the group's", async () => {
    expect(await planOf(page({ userId: "u", status: "error" }))).toMatch(
      /USING INDEX traces_account_user_received \(project_num=\? AND user_id=\? AND received_at>\? AND received_at<\?\)/,
    );
    expect(await planOf(page({ errorGroup: "0123456789abcdef", status: "error" }))).toMatch(
      /INDEX traces_account_error_group \(project_num=\? AND error_group=\? AND received_at>\? AND received_at<\?\)/,
    );
  });

  it("retention deletes each project's expired traces through its time index, without the global one", async () => {
    const plan = await planOf(`DELETE FROM traces WHERE ${expiringProjects} AND received_at < @cutoff`);
    expect(plan).toMatch(/USING (COVERING )?INDEX traces_account_received \(project_num=\? AND received_at<\?\)/);
    expect(plan).not.toMatch(/SCAN traces/);
  });

  it("a run's calls come through its OTLP trace id or session index, not the project's time index", async () => {
    const otlp = await planOf(`SELECT seq FROM traces WHERE ${runCallsWhere.otlp}`);
    expect(otlp).toMatch(/USING INDEX traces_account_otlp_trace \(project_num=\? AND otlp_trace_id=\?\)/);
    expect(otlp).not.toMatch(/traces_account_received/);
    const session = await planOf(`SELECT seq FROM traces WHERE ${runCallsWhere.session}`);
    expect(session).toMatch(/USING INDEX traces_account_session_received \(project_num=\? AND session_id=\? AND received_at>\?\)/);
  });

  it("the Errors view under a key, provider or model reads the failed calls only; under a user, that user's calls", async () => {
    const errorsUnder = (init: Record<string, string>) => {
      const params: Record<string, unknown> = {};
      return planOf(
        `SELECT error_group, COUNT(*) FROM ${failedCallsWhere(resolveTraceFilter(create(TraceFilterSchema, init), 0), params)} GROUP BY error_group`,
      );
    };
    for (const init of [{ model: "o3" }, { provider: "openai" }, { keyId: "key_1" }, {}] as Record<string, string>[])
      expect(await errorsUnder(init), JSON.stringify(init)).toMatch(
        /USING INDEX traces_account_error_received \(project_num=\? AND received_at>\? AND received_at<\?\)/,
      );
    expect(await errorsUnder({ userId: "user-0" })).toMatch(/USING INDEX traces_account_user_received \(project_num=\? AND user_id=\?/);
  });

  it("runs by cost are ranked in the (project, end, cost) index alone, then only the dearest rows read (D75)", async () => {
    expect(await planOf(runCostRankSql)).toMatch(/SEARCH runs USING COVERING INDEX runs_account_end \(project_num=\? AND end_ms>\?\)/);
    const plan = await planOf(`SELECT * FROM runs WHERE (project_num, otlp, run_key) IN (${dearRunsSql})`);
    expect(plan).toMatch(/SEARCH runs USING PRIMARY KEY \(project_num=\? AND otlp=\? AND run_key=\?\)/);
    expect(plan).toMatch(/SEARCH runs USING COVERING INDEX runs_account_end \(project_num=\? AND end_ms>\?\)/);
  });

  it("the Errors view's whole days under a model name read the error roll-ups by (project, day), never the calls (D70)", async () => {
    const params: Record<string, unknown> = {};
    const where = errorRollupWhere(resolveTraceFilter(create(TraceFilterSchema, { modelContains: "o3", keyId: "key_1" }), 0), params);
    for (const table of ["error_group_daily", "error_group_users"]) {
      const plan = await planOf(`SELECT group_id, SUM(calls) FROM ${table} ${where} GROUP BY group_id`);
      expect(plan).toMatch(new RegExp(`SEARCH ${table} USING PRIMARY KEY \\(account_id=\\? AND day>\\? AND day<\\?\\)`));
      expect(plan).not.toMatch(/traces/);
    }
  });

  it("a page of one model's calls reads the model index by the model's number (D68), in time order", async () => {
    const plan = await planOf(page({ model: "gpt-4o" }));
    expect(plan).toMatch(
      /USING INDEX traces_account_model_received \(project_num=\? AND model_num=\? AND received_at>\? AND received_at<\?\)/,
    );
    expect(plan).not.toMatch(/TEMP B-TREE/);
  });

  it("a page of a model name match reads the project's time index, matching the names once (D68)", async () => {
    const plan = await planOf(page({ modelContains: "gpt" }));
    expect(plan).toMatch(/USING INDEX traces_account_received \(project_num=\? AND received_at>\? AND received_at<\?\)/);
    expect(plan).not.toMatch(/TEMP B-TREE/);
  });

  it("a group-by of one user's tags reads the user's index, and looks a value's tracking up by one point of group_daily's key (D67)", async () => {
    const params: Record<string, unknown> = {};
    const tag = groupExpression({ kind: "tag" }, params);
    const plan = await planOf(
      `SELECT ${cappedExpression(tag.value, "tag", params)} AS "group", COUNT(*) FROM ${tracesFor(resolveTraceFilter(create(TraceFilterSchema, { userId: "u" }), 0))}${tag.join}
       WHERE ${projectIs} AND received_at >= @from AND received_at < @to AND user_id = @user GROUP BY 1`,
    );
    expect(plan).toMatch(
      /USING INDEX traces_account_user_received \(project_num=\? AND user_id=\? AND received_at>\? AND received_at<\?\)/,
    );
    expect(plan).toMatch(/SEARCH tracked USING PRIMARY KEY \(project_num=\? AND dimension=\? AND day=\? AND value=\? AND status=\?\)/);
    // Whether the range's days counted any value as other, which the lookup is needed for: a point of group_daily's key per day (D78).
    expect(await planOf(countedOtherSql)).toMatch(
      /SEARCH group_daily USING PRIMARY KEY \(project_num=\? AND dimension=\? AND day=\? AND value=\?\)/,
    );
  });

  it.each([
    { set: tagSet, group: { kind: "tag" } },
    { set: metadataSet, group: { kind: "metadata", key: "feature" } },
    { set: metadataSet, group: { kind: "metadataKey" } },
  ] as const)("a group-by of one user's $group.kind over $set.table (D83, D86) reads the user index alone, a set by its number", async ({ set, group }) => {
    const params: Record<string, unknown> = {};
    const ofSet = groupExpression(group, params, set.table);
    const bySet = `SELECT ${statusOfFailed} AS status, ${set.num}, received_at / 86400000 AS ${setCall.day}, ${statusOfFailed} AS ${setCall.status},
        COUNT(*) AS calls, SUM(cost_usd) AS costUsd
      FROM ${tracesFor(resolveTraceFilter(create(TraceFilterSchema, { userId: "u" }), 0))}
      WHERE ${projectIs} AND received_at >= @from AND received_at < @to AND user_id = @user AND ${set.num} IS NOT NULL
      GROUP BY failed, ${set.num}, ${setCall.day}`;
    const capped = { value: cappedExpression(ofSet.value, dimensionName(group), params, setCall), join: ofSet.join };
    const plan = await planOf(setGroupsSql(set, bySet, capped, ["status"], ["calls", "costUsd"], true));
    expect(plan).toMatch(
      /USING COVERING INDEX traces_account_user_received \(project_num=\? AND user_id=\? AND received_at>\? AND received_at<\?\)/,
    );
    expect(plan).toMatch(new RegExp(`SEARCH ${set.table} USING INTEGER PRIMARY KEY \\(rowid=\\?\\)`));
    expect(plan).toMatch(/SEARCH tracked USING PRIMARY KEY \(project_num=\? AND dimension=\? AND day=\? AND value=\? AND status=\?\)/);
    expect(plan).not.toMatch(new RegExp(`SCAN traces|SCAN ${set.table}`));
  });

  it("group_daily is keyed by day before value (D78): a range's group-by reads its days only, a value's reads seek each day", async () => {
    const rangeOf = (where: string) =>
      `SELECT value, status, SUM(calls) FROM group_daily WHERE ${projectIs} AND ${where} AND dimension = @dimension GROUP BY value, status`;
    expect(await planOf(rangeOf("day >= @from AND day < @to"))).toMatch(
      /SEARCH group_daily USING PRIMARY KEY \(project_num=\? AND dimension=\? AND day>\? AND day<\?\)/,
    );
    const point = /SEARCH (group_daily|o) USING PRIMARY KEY \(project_num=\? AND dimension=\? AND day=\? AND value=\?\)/;
    // The latency of the top values, and the calls that carry a metadata key.
    expect(await planOf(rangeOf(`${dayIn("@from", "@to")} AND value IN (SELECT value FROM json_each(@values))`))).toMatch(point);
    expect(
      await planOf(
        `SELECT SUM(calls) FROM group_daily WHERE ${projectIs} AND ${dayIn("@from", "@to")} AND dimension = 'metadataKey' AND value = @key`,
      ),
    ).toMatch(point);
    const untracked = await planOf(untrackedDaysSql);
    expect(untracked).toMatch(point);
    expect(untracked).toMatch(/SEARCH t USING PRIMARY KEY \(project_num=\? AND dimension=\? AND day=\? AND value=\?\)/);
    // The writer's reads: a day's values when the cap's set is seeded, one value's row when re-pricing.
    const dayPlan = await planOf(`SELECT DISTINCT value FROM group_daily WHERE project_num = @p AND dimension = @d AND day = @day`);
    expect(dayPlan).toMatch(/SEARCH group_daily USING PRIMARY KEY \(project_num=\? AND dimension=\? AND day=\?\)/);
    expect(
      await planOf(`SELECT 1 FROM group_daily WHERE project_num = @p AND dimension = @d AND value = @v AND day = @day LIMIT 1`),
    ).toMatch(point);
    expect([untracked, dayPlan].join("\n")).not.toMatch(/SCAN group_daily/);
  });

  it("a group-by's top groups are ranked from a range of days' rows by the roll-up's key, never a scan (D80)", async () => {
    const days = "day >= @from AND day < @to";
    const attribute = await planOf(rankedGroupsSql("group_daily", "value", `WHERE ${projectIs} AND ${days} AND dimension = @dimension`));
    expect(attribute).toMatch(/SEARCH group_daily USING PRIMARY KEY \(project_num=\? AND dimension=\? AND day>\? AND day<\?\)/);
    const key = await planOf(rankedGroupsSql("usage_daily", "key_id", `WHERE account_id = @account AND ${days}`));
    expect(key).toMatch(/SEARCH usage_daily USING PRIMARY KEY \(account_id=\? AND day>\? AND day<\?\)/);
    expect([attribute, key].join("\n")).not.toMatch(/SCAN (group_daily|usage_daily)/);
  });

  it("a large import's runs are summed from its rows by sequence number ranges, sorted once, never a scan of the traces (D81)", async () => {
    const plan = await planOf(pendingRunsSql);
    expect(plan).toMatch(/SCAN runs_pending/);
    expect(plan).toMatch(/SEARCH traces USING INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\)/);
    expect(plan).toMatch(/USE TEMP B-TREE FOR GROUP BY/);
    expect(plan).not.toMatch(/SCAN traces/);
  });

  it("a user's Overview reads its calls by model, day, key and provider from the user's index alone, and its totals, trend and latency from group_daily (D82)", async () => {
    const params: Record<string, unknown> = {};
    const filter = resolveTraceFilter(create(TraceFilterSchema, { userId: "u" }), 0);
    const range = `FROM ${tracesFor(filter)} WHERE ${projectIs} AND received_at >= @from AND received_at < @to${traceConditions(filter, params)}`;
    const covering =
      /SEARCH traces USING COVERING INDEX traces_account_user_received \(project_num=\? AND user_id=\? AND received_at>\? AND received_at<\?\)/;
    const sums = "COUNT(*), SUM(cost_usd), SUM(tokens_in), SUM(tokens_out), SUM(price_check = 3), SUM(price_check = 2)";
    // As the reader groups them: the status by its flag, a key or model by its number.
    expect(
      await planOf(
        `SELECT received_at / 86400000 AS day, provider_num, model_num, ${statusOfFailed} AS status, ${sums} ${range} GROUP BY day, provider_num, model_num, failed`,
      ),
    ).toMatch(covering);
    expect(await planOf(`SELECT key_num, latency_bucket(latency_ms) AS bucket, COUNT(*) ${range} GROUP BY key_num, bucket`)).toMatch(
      covering,
    );
    // The virtual status column itself is not covered: the reason the reads group by the flag.
    expect(await planOf(`SELECT status, ${sums} ${range} GROUP BY status`)).not.toMatch(covering);
    const user = await planOf(
      `SELECT day, status, SUM(calls) FROM group_daily WHERE ${projectIs} AND ${dayIn("@from", "@to")} AND dimension = @dimension AND value = @value GROUP BY day, status`,
    );
    expect(user).toMatch(/SEARCH group_daily USING PRIMARY KEY \(project_num=\? AND dimension=\? AND day=\? AND value=\?\)/);
    expect(user).not.toMatch(/SCAN group_daily/);
  });

  it("a group-by of keys, providers or models read from the calls ranges over the filter's index, never walks the project's calls in the group's index order", async () => {
    // At 10 million traces, GROUP BY key_num under a provider and a model name walked the
    // (project, key, received_at) index over the whole project: 0.7 s for a few minutes' calls.
    const params: Record<string, unknown> = {};
    const filter = resolveTraceFilter(create(TraceFilterSchema, { provider: "anthropic", modelContains: "claude" }), 0);
    const range = `FROM ${tracesFor(filter)} WHERE ${projectIs} AND received_at >= @from AND received_at < @to${traceConditions(filter, params)}`;
    for (const column of ["key_num", "provider_num", "model_num"]) {
      const plan = await planOf(
        `SELECT ${column}, ${statusOfFailed} AS status, COUNT(*) ${range} GROUP BY ${groupedNumber(column)}, failed`,
      );
      expect(plan, column).toMatch(
        /SEARCH traces USING INDEX traces_account_model_received \(project_num=\? AND model_num=\? AND received_at>\? AND received_at<\?\)/,
      );
      expect(plan, column).toMatch(/USE TEMP B-TREE FOR GROUP BY/);
    }
  });

  it("the traces table has no index that no read uses: no global time index, no status index of successes", async () => {
    const dir = tempDir();
    await openSqliteStore(dir).close();
    const db = new Database(join(dir, "calltrace.db"), { readonly: true });
    const indexes = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'traces'`).pluck().all();
    db.close();
    expect(indexes).not.toContain("traces_received");
    expect(indexes).not.toContain("traces_account_status_received");
    expect(indexes).toContain("traces_account_error_received");
  });
});
