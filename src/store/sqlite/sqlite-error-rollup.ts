import type Database from "better-sqlite3";
import { errorGroupOf } from "../error-group.js";
import { capScope, otherValue, type ValueCap, valueCap } from "../value-cap.js";
import { errorGroupIndex, type TraceValues } from "./sqlite-trace-row.js";

const dayMs = 86_400_000;
/** Users tracked per error group and day: the view lists a few, so more would only grow the table. */
export const errorUsersPerGroup = 100;

/**
 * The error groups of the writer's batches (see the error_groups migration in
 * sqlite-schema.ts). `assign` names a failed call's group before its row is inserted: the group of
 * its masked message, or the other group once the project's day has the cap's number of groups (D54's
 * cap, so a client sending a unique message per call cannot grow the roll-ups without bound); the
 * row keeps it, so the Traces page's group filter selects exactly the calls a group counts.
 * `add` then counts the stored rows, in the transaction that inserts them.
 */
export function sqliteErrorRollup(db: Database.Database, groups: ValueCap) {
  const users = valueCap(errorUsersPerGroup);
  const statements = {
    dayGroups: db.prepare(`SELECT group_id FROM error_groups WHERE account_id = ? AND day = ?`).pluck(),
    groupUsers: db.prepare(`SELECT DISTINCT user_id FROM error_group_users WHERE account_id = ? AND day = ? AND group_id = ?`).pluck(),
    group: db.prepare(`INSERT INTO error_groups (account_id, day, group_id, message) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`),
    daily: db.prepare(
      `INSERT INTO error_group_daily (account_id, day, group_id, provider, model, key_id, calls, cost_usd, first_ms, last_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET calls = calls + excluded.calls, cost_usd = cost_usd + excluded.cost_usd,
       first_ms = MIN(first_ms, excluded.first_ms), last_ms = MAX(last_ms, excluded.last_ms)`,
    ),
    user: db.prepare(
      `INSERT INTO error_group_users (account_id, day, group_id, user_id, provider, model, key_id, calls) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT DO UPDATE SET calls = calls + excluded.calls`,
    ),
  };
  const messages = new Map<string, string>();

  const admitted = (cap: ValueCap, scope: string, value: string, seed: () => unknown[]) => {
    if (!cap.has(scope)) cap.seed(scope, seed() as string[]);
    return cap.admit(scope, value);
  };

  return {
    assign(values: TraceValues): void {
      if (values[10] !== "error") return;
      const [receivedAt, , accountId] = values;
      const day = Math.floor(receivedAt / dayMs);
      const { id, message } = errorGroupOf(values[11]);
      const group = admitted(groups, capScope(accountId, "error", day), id, () => statements.dayGroups.all(accountId, day));
      values[errorGroupIndex] = group;
      if (group !== otherValue) messages.set(group, message);
    },
    add(stored: TraceValues[]): void {
      const daily = new Map<string, { params: unknown[]; calls: number; cost: number; first: number; last: number }>();
      const perUser = new Map<string, { params: unknown[]; calls: number }>();
      const named = new Map<string, unknown[]>();
      for (const v of stored) {
        const [receivedAt, keyId, accountId, , provider, model, , , , cost] = v;
        const group = v[errorGroupIndex] as string | null;
        if (group === null) continue;
        const day = Math.floor(receivedAt / dayMs);
        if (group !== otherValue) named.set(JSON.stringify([accountId, day, group]), [accountId, day, group, messages.get(group) ?? ""]);
        const key = JSON.stringify([accountId, day, group, provider, model, keyId]);
        let cell = daily.get(key);
        if (!cell)
          daily.set(
            key,
            (cell = { params: [accountId, day, group, provider, model, keyId], calls: 0, cost: 0, first: receivedAt, last: receivedAt }),
          );
        cell.calls += 1;
        cell.cost += cost;
        cell.first = Math.min(cell.first, receivedAt);
        cell.last = Math.max(cell.last, receivedAt);
        const userId = v[22];
        if (userId !== null) {
          const user = admitted(users, capScope(accountId, `error-user:${group}`, day), userId, () =>
            statements.groupUsers.all(accountId, day, group),
          );
          const userKey = JSON.stringify([accountId, day, group, user, provider, model, keyId]);
          const u = perUser.get(userKey);
          if (u) u.calls += 1;
          else perUser.set(userKey, { params: [accountId, day, group, user, provider, model, keyId], calls: 1 });
        }
      }
      messages.clear();
      for (const params of named.values()) statements.group.run(...params);
      for (const c of daily.values()) statements.daily.run(...c.params, c.calls, c.cost, c.first, c.last);
      for (const u of perUser.values()) statements.user.run(...u.params, u.calls);
    },
  };
}
