import type Database from "better-sqlite3";
import { PriceCheck } from "../../../gen/calltrace/v1/trace_pb.js";
import { latencyBucket } from "../latency-bucket.js";
import { cappedGroups, type Groups, groupsOf, metadataGroups, tagGroups } from "../trace-groups.js";
import { capScope, otherValue, type ValueCap } from "../value-cap.js";
import type { TraceValues } from "./sqlite-trace-row.js";
import { numberOf } from "./sqlite-id-numbers.js";

export const dayMs = 86_400_000;
export const hourMs = 3_600_000;

interface Counts {
  calls: number;
  cost: number;
  tokensIn: number;
  tokensOut: number;
  unpriced: number;
  mismatched: number;
}

const sumsUpdate = `calls = calls + excluded.calls, cost_usd = cost_usd + excluded.cost_usd,
  tokens_in = tokens_in + excluded.tokens_in, tokens_out = tokens_out + excluded.tokens_out`;
// usage_daily and usage_country_daily also count the calls the server could not price or priced differently.
const checkedSumsUpdate = `${sumsUpdate}, unpriced = unpriced + excluded.unpriced, mismatched = mismatched + excluded.mismatched`;

/** The attribute groups a trace counts in (see the group_daily migration in sqlite-schema.ts and trace-groups.ts). */
export function traceGroups(values: TraceValues, parsed: ParsedTexts = new Map()): Groups {
  return groupsOf(
    { serviceName: values[21], userId: values[22], sessionId: values[23], environment: values[26] },
    values[24] === null ? noTags : parsedOf(parsed, values[24], (text) => tagGroups(JSON.parse(text) as string[])),
    values[25] === null
      ? noMetadata
      : parsedOf(parsed, values[25], (text) => metadataGroups(Object.entries(JSON.parse(text) as Record<string, string>))),
  );
}

const noTags = tagGroups([]);
const noMetadata = metadataGroups([]);

/** The groups of JSON texts of tags and metadata, made once per batch: a batch's traces repeat a few of them. Read only. */
type ParsedTexts = Map<string, unknown>;

function parsedOf<T>(parsed: ParsedTexts, text: string, parse: (text: string) => T): T {
  let value = parsed.get(text) as T | undefined;
  if (value === undefined) parsed.set(text, (value = parse(text)));
  return value;
}

/** The value a roll-up counts a trace's value under: itself, or the other value (D54). */
export type GroupValueOf = (accountId: string, dimension: string, day: number, value: string) => string;

/** For new traces: values admitted under the cap, whose sets are seeded from group_daily. */
export function admittedValues(db: Database.Database, cap: ValueCap): GroupValueOf {
  // A day without usage rows has no groups yet: the common case needs no read of group_daily.
  const dayHasRows = db.prepare(`SELECT 1 FROM usage_daily WHERE account_id = ? AND day = ? LIMIT 1`).pluck();
  const dayValues = db
    .prepare(`SELECT DISTINCT value FROM group_daily WHERE project_num = ${numberOf("?")} AND dimension = ? AND day = ?`)
    .pluck();
  // Each scope's key is built once per project and day, not per group of every trace: hashing a
  // new string per look-up was a tenth of a batch's summing.
  let scopes = { accountId: "", day: Number.NaN, byDimension: new Map<string, string>() };
  return (accountId, dimension, day, value) => {
    if (scopes.accountId !== accountId || scopes.day !== day) scopes = { accountId, day, byDimension: new Map() };
    let scope = scopes.byDimension.get(dimension);
    if (scope === undefined) scopes.byDimension.set(dimension, (scope = capScope(accountId, dimension, day)));
    if (!cap.has(scope))
      cap.seed(scope, dayHasRows.get(accountId, day) === undefined ? [] : (dayValues.all(accountId, dimension, day) as string[]));
    return cap.admit(scope, value);
  };
}

/** For stored traces counted again (re-pricing): the value where the roll-ups counted it, tracked if group_daily has its row. */
export function countedValues(db: Database.Database): GroupValueOf {
  const counted = db
    .prepare(`SELECT 1 FROM group_daily WHERE project_num = ${numberOf("?")} AND dimension = ? AND value = ? AND day = ? LIMIT 1`)
    .pluck();
  return (accountId, dimension, day, value) =>
    value === "" || counted.get(accountId, dimension, value, day) !== undefined ? value : otherValue;
}

/**
 * Sums of one roll-up row (its key columns in `params`), with its calls per latency bucket: for
 * the roll-up beside it that keeps latency (latency_daily beside usage_country_daily), or on the
 * row itself (group_daily's latency column).
 */
interface Sums extends Counts {
  params: unknown[];
  buckets: Buckets;
  /** A usage_country_daily row's: the rows of its traces by the environment they count under (D67, D73). */
  byEnvironment?: Map<string, EnvironmentRows>;
}

/**
 * The usage_environment_daily row and usage_hourly rows (by hour) of a usage_country_daily row's
 * traces under one environment: found from the trace's usage row without building their keys.
 */
interface EnvironmentRows {
  environment: Sums | undefined;
  hours: Map<number, Sums>;
}

/** The rows of one roll-up, by a key that names their params unambiguously. */
type Rows = Map<string, Sums>;

/** The row of `rows` under `key`, new and empty if there is none yet. */
function rowOf(rows: Rows, key: string, params: () => unknown[]): Sums {
  let row = rows.get(key);
  if (!row) rows.set(key, (row = emptySums(params())));
  return row;
}

function emptySums(params: unknown[]): Sums {
  return { params, calls: 0, cost: 0, tokensIn: 0, tokensOut: 0, unpriced: 0, mismatched: 0, buckets: {} };
}

/**
 * Rows of a batch in a tree of maps, a level per key column, and in a list in the order they
 * were made: a trace finds its row with a few look-ups of values it holds, where building and
 * hashing a key string for it cost several times more (D85).
 */
interface RowTree {
  root: Branch;
  all: Sums[];
}
type Branch = Map<unknown, Branch | Sums>;

function branchOf(branch: Branch, key: unknown): Branch {
  let next = branch.get(key) as Branch | undefined;
  if (!next) branch.set(key, (next = new Map()));
  return next;
}

/** A new, empty row of `tree` with `params`, under `key` in `branch`. Callers look the row up first, so a found row builds no params. */
function newLeaf(tree: RowTree, branch: Branch, key: unknown, params: unknown[]): Sums {
  const row = emptySums(params);
  branch.set(key, row);
  tree.all.push(row);
  return row;
}

/** The row of `tree` keyed by all of `params`, new and empty if there is none yet. */
function rowAt(tree: RowTree, params: unknown[]): Sums {
  let branch = tree.root;
  for (let i = 0; i < params.length - 1; i++) branch = branchOf(branch, params[i]);
  const key = params[params.length - 1];
  return (branch.get(key) as Sums | undefined) ?? newLeaf(tree, branch, key, params);
}

/** Counts a trace (or, with a sign of -1, takes it out) in a row. */
function count(row: Sums, t: TraceValues, bucket: number, sign: 1 | -1): void {
  row.calls += sign;
  row.cost += sign * t[9];
  row.tokensIn += sign * t[6];
  row.tokensOut += sign * t[7];
  const priceCheck = t[16];
  if (priceCheck === PriceCheck.UNPRICED) row.unpriced += sign;
  else if (priceCheck === PriceCheck.MISMATCH) row.mismatched += sign;
  row.buckets[bucket] = (row.buckets[bucket] ?? 0) + sign;
}

/** Adds one row's sums (and buckets) into another's. */
function addRow(into: Sums, row: Sums): void {
  into.calls += row.calls;
  into.cost += row.cost;
  into.tokensIn += row.tokensIn;
  into.tokensOut += row.tokensOut;
  into.unpriced += row.unpriced;
  into.mismatched += row.mismatched;
  for (const [bucket, calls] of bucketCalls(row.buckets)) into.buckets[bucket] = (into.buckets[bucket] ?? 0) + calls;
}

/** `rows` summed (with their buckets) into rows keyed by the params `keyOf` keeps of theirs. */
function summedRows(rows: Iterable<Sums>, keyOf: (params: unknown[]) => unknown[]): Rows {
  const summed: Rows = new Map();
  for (const row of rows) {
    const params = keyOf(row.params);
    addRow(
      rowOf(summed, JSON.stringify(params), () => params),
      row,
    );
  }
  return summed;
}

/** The columns of a trace that usage_country_daily groups by (with its day): the key id, project, country, provider, model and status. */
const usageColumns = [1, 2, 3, 4, 5, 10] as const;
/** The columns that decide a trace's attribute groups (with its day): the project, status and the attribution columns. */
const attributionColumns = [2, 10, 21, 22, 23, 24, 25, 26] as const;

function alike(a: TraceValues, b: TraceValues, columns: readonly number[]): boolean {
  for (const c of columns) if (a[c] !== b[c]) return false;
  return true;
}

/**
 * Calls per latency bucket, by bucket: an object, not a Map, as a trace counts in a dozen rows
 * and an object's integer keys cost a third of a Map's look-up and set. JSON.stringify writes it
 * as group_daily keeps it (integer keys come ascending).
 */
type Buckets = Record<number, number>;

function bucketCalls(buckets: Buckets): [bucket: number, calls: number][] {
  return Object.entries(buckets).map(([bucket, calls]) => [Number(bucket), calls]);
}

/** Adds calls per latency bucket, JSON objects of bucket to calls as group_daily keeps them; a bucket whose calls fall to 0 goes. */
export function addLatency(stored: string, added: string): string {
  const sum = JSON.parse(stored) as Record<string, number>;
  for (const [bucket, calls] of Object.entries(JSON.parse(added) as Record<string, number>)) {
    const next = (sum[bucket] ?? 0) + calls;
    if (next === 0) delete sum[bucket];
    else sum[bucket] = next;
  }
  return JSON.stringify(sum);
}

/**
 * Keeps the roll-ups (usage_daily, usage_country_daily, latency_daily, latency_daily_all, and
 * group_daily, usage_environment_daily and usage_hourly with their calls per latency bucket, and
 * latency_environment_daily from usage_environment_daily's) in step with the
 * traces. The returned function must run inside the transaction that inserts the traces, so a
 * roll-up never counts a trace that was not committed, or misses one that was. A batch is
 * summed in memory first: one upsert per distinct row, not one per trace. A trace is counted in
 * a usage_country_daily row (usage_daily, latency_daily and latency_daily_all are summed from
 * those, which are few) and in its attribute groups' group_daily rows, each with its latency
 * bucket, under an environment its day tracks, in a usage_environment_daily row (D67), and in
 * its hour's usage_hourly row (D73). Traces come in runs from the same client: a trace alike the one before it in the
 * columns a row is keyed by counts in the same rows without a key or a lookup, so a plain trace
 * costs a comparison. A sign of -1 takes the traces out again: re-pricing takes out a trace's
 * old values and adds its new ones.
 */
export function sqliteUsageRollup(db: Database.Database, keptValueOf: GroupValueOf): (traces: TraceValues[], sign?: 1 | -1) => void {
  const usage = db.prepare(
    `INSERT INTO usage_daily (account_id, day, provider, model, status, key_id, calls, cost_usd, tokens_in, tokens_out, unpriced, mismatched)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET ${checkedSumsUpdate}`,
  );
  const country = db.prepare(
    `INSERT INTO usage_country_daily (account_id, day, country, provider, model, status, key_id, calls, cost_usd, tokens_in, tokens_out, unpriced, mismatched)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET ${checkedSumsUpdate}`,
  );
  const latency = db.prepare(
    `INSERT INTO latency_daily (account_id, day, provider, model, bucket, status, key_id, calls)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET calls = calls + excluded.calls`,
  );
  const latencyAll = db.prepare(
    `INSERT INTO latency_daily_all (account_id, day, provider, model, bucket, calls)
     VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET calls = calls + excluded.calls`,
  );
  db.function("add_latency", { deterministic: true }, (stored, added) => addLatency(stored as string, added as string));
  const group = db.prepare(
    `INSERT INTO group_daily (project_num, dimension, value, day, status, calls, cost_usd, tokens_in, tokens_out, unpriced, mismatched, latency)
     VALUES (${numberOf("?")}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT DO UPDATE SET ${checkedSumsUpdate}, latency = add_latency(latency, excluded.latency)`,
  );
  const environment = db.prepare(
    `INSERT INTO usage_environment_daily (account_id, environment, day, provider, model, status, key_id, calls, cost_usd, tokens_in, tokens_out, unpriced, mismatched, latency)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT DO UPDATE SET ${checkedSumsUpdate}, latency = add_latency(latency, excluded.latency)`,
  );
  const latencyEnvironment = db.prepare(
    `INSERT INTO latency_environment_daily (account_id, environment, day, provider, model, bucket, calls)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET calls = calls + excluded.calls`,
  );
  const hourly = db.prepare(
    `INSERT INTO usage_hourly (account_id, hour, environment, provider, model, status, key_id, calls, cost_usd, tokens_in, tokens_out, unpriced, mismatched, latency)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT DO UPDATE SET ${checkedSumsUpdate}, latency = add_latency(latency, excluded.latency)`,
  );

  return (traces, sign = 1) => {
    const countryRows: RowTree = { root: new Map(), all: [] };
    const groupRows: RowTree = { root: new Map(), all: [] };
    const environmentRows: RowTree = { root: new Map(), all: [] };
    const hourlyRows: RowTree = { root: new Map(), all: [] };
    const parsed: ParsedTexts = new Map();
    let usageOf: TraceValues | undefined;
    let usageDay = 0;
    let usageRow: Sums | undefined;
    let groupsOf: TraceValues | undefined;
    let groupsDay = 0;
    let groupRowsOfTrace: Sums[] = [];
    // Keyed by both the usage row's columns and the environment's group: found again when either changes.
    let environmentRow: Sums | undefined;
    let environmentStale = true;
    let hourlyRow: Sums | undefined;
    let hourlyHour = 0;
    for (const t of traces) {
      const day = Math.floor(t[0] / dayMs);
      const hour = Math.floor(t[0] / hourMs);
      if (!(usageOf && usageDay === day && alike(t, usageOf, usageColumns))) {
        const [, keyId, accountId, countryCode, provider, model, , , , , status] = t;
        const byModel = branchOf(
          branchOf(branchOf(branchOf(branchOf(branchOf(countryRows.root, day), keyId), accountId), countryCode), provider),
          model,
        );
        usageRow =
          (byModel.get(status) as Sums | undefined) ??
          newLeaf(countryRows, byModel, status, [accountId, day, countryCode, provider, model, status, keyId]);
        usageOf = t;
        usageDay = day;
        environmentStale = true;
      }
      if (!(groupsOf && groupsDay === day && alike(t, groupsOf, attributionColumns))) {
        groupRowsOfTrace = attributeRows(groupRows, t, day, keptValueOf, parsed);
        groupsOf = t;
        groupsDay = day;
        environmentStale = true;
      }
      if (environmentStale || hour !== hourlyHour) {
        const kept = keptEnvironment(groupRowsOfTrace);
        usageRow!.byEnvironment ??= new Map();
        let rowsOfKept = usageRow!.byEnvironment.get(kept);
        if (!rowsOfKept)
          usageRow!.byEnvironment.set(
            kept,
            (rowsOfKept = { environment: environmentRowOf(environmentRows, usageRow!, kept), hours: new Map() }),
          );
        if (environmentStale) environmentRow = rowsOfKept.environment;
        hourlyRow = rowsOfKept.hours.get(hour);
        if (!hourlyRow) rowsOfKept.hours.set(hour, (hourlyRow = hourlyRowOf(hourlyRows, usageRow!, kept, hour)));
        hourlyHour = hour;
        environmentStale = false;
      }
      const bucket = latencyBucket(t[8]);
      count(usageRow!, t, bucket, sign);
      for (const row of groupRowsOfTrace) count(row, t, bucket, sign);
      if (environmentRow) count(environmentRow, t, bucket, sign);
      count(hourlyRow!, t, bucket, sign);
    }
    // The few usage_country_daily rows give the other usage roll-ups' rows, each summed over what
    // its key leaves out; the latency roll-ups take a row per bucket of those rows' buckets, so no
    // key is built per bucket.
    const usageRows = summedRows(countryRows.all, ([accountId, day, , provider, model, status, keyId]) => [
      accountId,
      day,
      provider,
      model,
      status,
      keyId,
    ]);
    const modelRows = summedRows(usageRows.values(), ([accountId, day, provider, model]) => [accountId, day, provider, model]);
    // latency_environment_daily's from usage_environment_daily's, summed over keys and statuses.
    const environmentModelRows = summedRows(environmentRows.all, ([accountId, environmentName, day, provider, model]) => [
      accountId,
      environmentName,
      day,
      provider,
      model,
    ]);
    for (const s of usageRows.values()) usage.run(...s.params, s.calls, s.cost, s.tokensIn, s.tokensOut, s.unpriced, s.mismatched);
    for (const s of countryRows.all) country.run(...s.params, s.calls, s.cost, s.tokensIn, s.tokensOut, s.unpriced, s.mismatched);
    for (const { params, buckets } of usageRows.values()) {
      const [accountId, day, provider, model, status, keyId] = params;
      for (const [bucket, calls] of bucketCalls(buckets)) latency.run(accountId, day, provider, model, bucket, status, keyId, calls);
    }
    for (const { params, buckets } of modelRows.values())
      for (const [bucket, calls] of bucketCalls(buckets)) latencyAll.run(...params, bucket, calls);
    for (const { params, buckets } of environmentModelRows.values())
      for (const [bucket, calls] of bucketCalls(buckets)) latencyEnvironment.run(...params, bucket, calls);
    // These keep their calls per latency bucket on the row (D65).
    for (const [statement, rows] of [
      [group, groupRows.all],
      [environment, environmentRows.all],
      [hourly, hourlyRows.all],
    ] as const) {
      for (const s of rows)
        statement.run(...s.params, s.calls, s.cost, s.tokensIn, s.tokensOut, s.unpriced, s.mismatched, JSON.stringify(s.buckets));
    }
  };
}

/** The environment a trace's day counts it under, from its group_daily rows: its own, other (D54), or '' for none. */
function keptEnvironment(groupRows: Sums[]): string {
  return (groupRows.find((row) => row.params[1] === "environment")?.params[2] as string | undefined) ?? "";
}

/**
 * The usage_environment_daily row of a trace counted in `usageRow` (usage_country_daily's) under
 * the environment `kept`, or none: a trace without an environment, or one its day counts under
 * other (D54), is read from the traces.
 */
function environmentRowOf(rows: RowTree, usageRow: Sums, kept: string): Sums | undefined {
  if (kept === "" || kept === otherValue) return undefined;
  const [accountId, day, , provider, model, status, keyId] = usageRow.params;
  return rowAt(rows, [accountId, kept, day, provider, model, status, keyId]);
}

/** The usage_hourly row of a trace counted in `usageRow` under the environment `kept`, in `hour` (hours since the epoch). */
function hourlyRowOf(rows: RowTree, usageRow: Sums, kept: string, hour: number): Sums {
  const [accountId, , , provider, model, status, keyId] = usageRow.params;
  return rowAt(rows, [accountId, hour, kept, provider, model, status, keyId]);
}

/** The group_daily rows a trace counts in on `day`, each once, its values past the bound as other (D54, trace-groups.ts). */
function attributeRows(rows: RowTree, t: TraceValues, day: number, keptValueOf: GroupValueOf, parsed: ParsedTexts): Sums[] {
  const accountId = t[2];
  const status = t[10];
  const byDimension = branchOf(branchOf(branchOf(rows.root, day), status), accountId);
  return cappedGroups(traceGroups(t, parsed), (dimension, value) => keptValueOf(accountId, dimension, day, value)).map(
    ([dimension, kept]) => {
      const byValue = branchOf(byDimension, dimension);
      return (byValue.get(kept) as Sums | undefined) ?? newLeaf(rows, byValue, kept, [accountId, dimension, kept, day, status]);
    },
  );
}
