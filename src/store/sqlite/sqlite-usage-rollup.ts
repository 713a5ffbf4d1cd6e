import type Database from "better-sqlite3";
import { PriceCheck } from "../../../gen/calltrace/v1/trace_pb.js";
import { latencyBucket } from "../latency-bucket.js";
import { capScope, otherValue, type ValueCap } from "../value-cap.js";
import type { TraceValues } from "./sqlite-trace-row.js";

export const dayMs = 86_400_000;

interface Counts {
  calls: number;
  cost: number;
  tokensIn: number;
  tokensOut: number;
  unpriced: number;
  mismatched: number;
}

interface Sums extends Counts {
  params: unknown[];
}

/**
 * The traces of a batch that count in the same rows of every roll-up but the latency ones: one of
 * them, their sums, and their calls per latency bucket.
 */
interface Alike extends Counts {
  trace: TraceValues;
  day: number;
  buckets: Map<number, number>;
}

/** The columns of a trace that some roll-up groups by (the attribution columns included). */
const groupedColumns = [1, 2, 3, 4, 5, 10, 21, 22, 23, 24, 25, 26] as const;

const sumsUpdate = `calls = calls + excluded.calls, cost_usd = cost_usd + excluded.cost_usd,
  tokens_in = tokens_in + excluded.tokens_in, tokens_out = tokens_out + excluded.tokens_out`;
// usage_daily and usage_country_daily also count the calls the server could not price or priced differently.
const checkedSumsUpdate = `${sumsUpdate}, unpriced = unpriced + excluded.unpriced, mismatched = mismatched + excluded.mismatched`;

/**
 * The attribute groups a trace counts in (see the group_daily migration in sqlite-schema.ts):
 * one per dimension, one per distinct tag, and per metadata entry its key and its value.
 */
export function traceGroups(values: TraceValues): [dimension: string, value: string][] {
  const serviceName = values[21];
  const userId = values[22];
  const sessionId = values[23];
  const tags = values[24] === null ? [] : [...new Set(JSON.parse(values[24]) as string[])];
  const metadata = values[25] === null ? [] : Object.entries(JSON.parse(values[25]) as Record<string, string>);
  const environment = values[26];
  const groups: [string, string][] = [
    ["user", userId ?? ""],
    ["session", sessionId ?? ""],
    ["environment", environment ?? ""],
    ["service", serviceName ?? metadata.find(([k]) => k === "service")?.[1] ?? ""],
  ];
  if (tags.length === 0) groups.push(["tag", ""]);
  for (const tag of tags) groups.push(["tag", tag]);
  if (metadata.length === 0) groups.push(["metadataKey", ""]);
  for (const [key, value] of metadata) groups.push(["metadataKey", key], [`m:${key}`, value]);
  return groups;
}

/** The value a roll-up counts a trace's value under: itself, or the other value (D54). */
export type GroupValueOf = (accountId: string, dimension: string, day: number, value: string) => string;

/** For new traces: values admitted under the cap, whose sets are seeded from group_daily. */
export function admittedValues(db: Database.Database, cap: ValueCap): GroupValueOf {
  // A day without usage rows has no groups yet: the common case needs no scan of group_daily,
  // whose key starts with the value.
  const dayHasRows = db.prepare(`SELECT 1 FROM usage_daily WHERE account_id = ? AND day = ? LIMIT 1`).pluck();
  const dayValues = db.prepare(`SELECT DISTINCT value FROM group_daily WHERE account_id = ? AND dimension = ? AND day = ?`).pluck();
  return (accountId, dimension, day, value) => {
    const scope = capScope(accountId, dimension, day);
    if (!cap.has(scope)) cap.seed(scope, dayHasRows.get(accountId, day) === undefined ? [] : (dayValues.all(accountId, dimension, day) as string[]));
    return cap.admit(scope, value);
  };
}

/** For stored traces counted again (re-pricing): the value where the roll-ups counted it, tracked if group_daily has its row. */
export function countedValues(db: Database.Database): GroupValueOf {
  const counted = db.prepare(`SELECT 1 FROM group_daily WHERE account_id = ? AND dimension = ? AND value = ? AND day = ? LIMIT 1`).pluck();
  return (accountId, dimension, day, value) =>
    value === "" || counted.get(accountId, dimension, value, day) !== undefined ? value : otherValue;
}

/**
 * A trace's groups as the roll-ups count them on `day`: each value not tracked becomes the
 * dimension's other value (D54), each group once; a metadata key counted as other keeps none of
 * its values, so a client cannot make a dimension per key either.
 */
function cappedGroups(
  groups: [dimension: string, value: string][],
  accountId: string,
  day: number,
  keptValueOf: GroupValueOf,
): [dimension: string, value: string][] {
  const capped = new Map<string, [string, string]>();
  // traceGroups puts each metadata key right before its value.
  let keyIsOther = false;
  for (const [dimension, value] of groups) {
    if (keyIsOther && dimension.startsWith("m:")) continue;
    const kept = keptValueOf(accountId, dimension, day, value);
    if (dimension === "metadataKey") keyIsOther = kept === otherValue;
    capped.set(`${dimension}\u0000${kept}`, [dimension, kept]);
  }
  return [...capped.values()];
}

/**
 * Keeps the daily roll-ups (usage_daily, usage_country_daily, latency_daily, latency_daily_all,
 * group_daily, group_latency_daily) in step with the
 * traces. The returned function must run inside the transaction that inserts the traces, so a
 * roll-up never counts a trace that was not committed, or misses one that was. A batch is
 * summed in memory first: one upsert per distinct group, not one per trace. The traces that
 * count in the same rows of every roll-up but the latency ones (most of a batch, often) are
 * summed together first, so a trace costs one comparison with the one before it, or one key,
 * rather than a key per roll-up row it counts in (14 for a trace without attribution). A sign of
 * -1 takes the traces out again: re-pricing takes out a trace's old values and adds its new ones.
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
  const group = db.prepare(
    `INSERT INTO group_daily (account_id, dimension, value, day, status, calls, cost_usd, tokens_in, tokens_out, unpriced, mismatched)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET ${checkedSumsUpdate}`,
  );
  const groupLatency = db.prepare(
    `INSERT INTO group_latency_daily (account_id, dimension, value, day, bucket, status, calls)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET calls = calls + excluded.calls`,
  );

  return (traces, sign = 1) => {
    const groups = {
      usage: new Map<string, Sums>(),
      country: new Map<string, Sums>(),
      latency: new Map<string, Sums>(),
      latencyAll: new Map<string, Sums>(),
      group: new Map<string, Sums>(),
      groupLatency: new Map<string, Sums>(),
    };
    for (const a of alikeTraces(traces, sign)) {
      const [, keyId, accountId, country, provider, model, , , , , status] = a.trace;
      const { day } = a;
      const attribution = cappedGroups(traceGroups(a.trace), accountId, day, keptValueOf);
      add(groups.usage, [accountId, day, provider, model, status, keyId], a);
      add(groups.country, [accountId, day, country, provider, model, status, keyId], a);
      for (const [dimension, value] of attribution) add(groups.group, [accountId, dimension, value, day, status], a);
      for (const [bucket, calls] of a.buckets) {
        const counts = { ...noCounts, calls };
        add(groups.latency, [accountId, day, provider, model, bucket, status, keyId], counts);
        add(groups.latencyAll, [accountId, day, provider, model, bucket], counts);
        for (const [dimension, value] of attribution) add(groups.groupLatency, [accountId, dimension, value, day, bucket, status], counts);
      }
    }
    for (const s of groups.usage.values()) usage.run(...s.params, s.calls, s.cost, s.tokensIn, s.tokensOut, s.unpriced, s.mismatched);
    for (const s of groups.country.values()) country.run(...s.params, s.calls, s.cost, s.tokensIn, s.tokensOut, s.unpriced, s.mismatched);
    for (const s of groups.latency.values()) latency.run(...s.params, s.calls);
    for (const s of groups.latencyAll.values()) latencyAll.run(...s.params, s.calls);
    for (const s of groups.group.values()) group.run(...s.params, s.calls, s.cost, s.tokensIn, s.tokensOut, s.unpriced, s.mismatched);
    for (const s of groups.groupLatency.values()) groupLatency.run(...s.params, s.calls);
  };
}

const noCounts: Counts = { calls: 0, cost: 0, tokensIn: 0, tokensOut: 0, unpriced: 0, mismatched: 0 };

/** The batch's traces summed by everything a roll-up groups by: the day and `groupedColumns`, then the latency bucket. */
function alikeTraces(traces: TraceValues[], sign: 1 | -1): Iterable<Alike> {
  const all = new Map<string, Alike>();
  let last: Alike | undefined;
  for (const t of traces) {
    const day = Math.floor(t[0] / dayMs);
    // Traces come in runs from the same client: most are alike the one before them, which no key needs.
    if (!(last && last.day === day && groupedColumns.every((c) => t[c] === last!.trace[c]))) {
      const key = JSON.stringify([day, ...groupedColumns.map((c) => t[c])]);
      last = all.get(key);
      if (!last) all.set(key, (last = { ...noCounts, trace: t, day, buckets: new Map() }));
    }
    const bucket = latencyBucket(t[8]);
    last.buckets.set(bucket, (last.buckets.get(bucket) ?? 0) + sign);
    last.calls += sign;
    last.cost += sign * t[9];
    last.tokensIn += sign * t[6];
    last.tokensOut += sign * t[7];
    const priceCheck = t[16];
    if (priceCheck === PriceCheck.UNPRICED) last.unpriced += sign;
    else if (priceCheck === PriceCheck.MISMATCH) last.mismatched += sign;
  }
  return all.values();
}

function add(groups: Map<string, Sums>, params: unknown[], counts: Counts): void {
  const key = JSON.stringify(params);
  let sums = groups.get(key);
  if (!sums) groups.set(key, (sums = { params, calls: 0, cost: 0, tokensIn: 0, tokensOut: 0, unpriced: 0, mismatched: 0 }));
  sums.calls += counts.calls;
  sums.cost += counts.cost;
  sums.tokensIn += counts.tokensIn;
  sums.tokensOut += counts.tokensOut;
  sums.unpriced += counts.unpriced;
  sums.mismatched += counts.mismatched;
}
