import type Database from "better-sqlite3";
import { PriceCheck } from "../../../gen/calltrace/v1/trace_pb.js";
import { latencyBucket } from "../latency-bucket.js";
import type { TraceValues } from "./sqlite-trace-row.js";

export const dayMs = 86_400_000;

interface Sums {
  params: unknown[];
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

/**
 * Keeps the daily roll-ups (usage_daily, usage_country_daily, latency_daily, latency_daily_all,
 * group_daily, group_latency_daily) in step with the
 * traces. The returned function must run inside the transaction that inserts the traces, so a
 * roll-up never counts a trace that was not committed, or misses one that was. A batch is
 * summed in memory first: one upsert per distinct group, not one per trace.
 */
export function sqliteUsageRollup(db: Database.Database): (traces: TraceValues[]) => void {
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

  return (traces) => {
    const groups = {
      usage: new Map<string, Sums>(),
      country: new Map<string, Sums>(),
      latency: new Map<string, Sums>(),
      latencyAll: new Map<string, Sums>(),
      group: new Map<string, Sums>(),
      groupLatency: new Map<string, Sums>(),
    };
    for (const t of traces) {
      const [receivedAt, keyId, accountId, country, provider, model, , , latencyMs, , status] = t;
      const day = Math.floor(receivedAt / dayMs);
      add(groups.usage, [accountId, day, provider, model, status, keyId], t);
      add(groups.country, [accountId, day, country, provider, model, status, keyId], t);
      const bucket = latencyBucket(latencyMs);
      add(groups.latency, [accountId, day, provider, model, bucket, status, keyId], t);
      add(groups.latencyAll, [accountId, day, provider, model, bucket], t);
      for (const [dimension, value] of traceGroups(t)) {
        add(groups.group, [accountId, dimension, value, day, status], t);
        add(groups.groupLatency, [accountId, dimension, value, day, bucket, status], t);
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

function add(groups: Map<string, Sums>, params: unknown[], t: TraceValues): void {
  const [, , , , , , tokensIn, tokensOut, , costUsd] = t;
  const priceCheck = t[16]; // price_check
  const key = JSON.stringify(params);
  let sums = groups.get(key);
  if (!sums) groups.set(key, (sums = { params, calls: 0, cost: 0, tokensIn: 0, tokensOut: 0, unpriced: 0, mismatched: 0 }));
  sums.calls += 1;
  sums.cost += costUsd;
  sums.tokensIn += tokensIn;
  sums.tokensOut += tokensOut;
  if (priceCheck === PriceCheck.UNPRICED) sums.unpriced += 1;
  else if (priceCheck === PriceCheck.MISMATCH) sums.mismatched += 1;
}
