import { timestampMs } from "@bufbuild/protobuf/wkt";
import type Database from "better-sqlite3";
import type { AlertEvent } from "../../../gen/calltrace/v1/alert_pb.js";
import type {
  AlertStore,
  ClaimedDelivery,
  DeliveryAttempt,
  DeliveryRecord,
  DeliveryState,
  DestinationKind,
  DestinationRecord,
  StoredSecret,
} from "../alert-store.js";
import { deliveryId, eventFromJson, eventToJson, ruleFromJson, ruleToJson } from "../alert-json.js";
import { keyFile } from "../alert-secret-key.js";

interface DestinationRow {
  id: string;
  account_id: string;
  kind: string;
  name: string;
  url: string;
  emails: string;
  secrets: string;
  created_at: number;
  failing_since: number | null;
  disabled_at: number | null;
  disabled_reason: string;
}

interface DeliveryRow {
  id: string;
  account_id: string;
  event_id: string;
  destination_id: string;
  state: string;
  next_attempt_at: number;
  scheduled_attempts: number;
  attempts: string;
  resent: number;
  created_at: number;
}

/** Alert rules, destinations, events and the delivery outbox in the embedded store's database. */
export function createSqliteAlertStore(db: Database.Database, secretKeyFile: string): AlertStore {
  const s = {
    insertRule: db.prepare(`INSERT INTO alert_rules (id, account_id, created_at, body) VALUES (?, ?, ?, ?)`),
    updateRule: db.prepare(`UPDATE alert_rules SET body = ? WHERE id = ? AND account_id = ?`),
    deleteRule: db.prepare(`DELETE FROM alert_rules WHERE id = ? AND account_id = ?`),
    deleteRuleState: db.prepare(`DELETE FROM alert_rule_state WHERE rule_id = ?`),
    rule: db.prepare(`SELECT body FROM alert_rules WHERE id = ? AND account_id = ?`).pluck(),
    rules: db.prepare(`SELECT body FROM alert_rules WHERE account_id = ? ORDER BY created_at, id`).pluck(),
    allRules: db.prepare(`SELECT body FROM alert_rules ORDER BY created_at, id`).pluck(),
    readState: db.prepare(`SELECT state FROM alert_rule_state WHERE rule_id = ?`).pluck(),
    writeState: db.prepare(
      `INSERT INTO alert_rule_state (rule_id, account_id, state) SELECT id, account_id, @state FROM alert_rules WHERE id = @rule
       ON CONFLICT (rule_id) DO UPDATE SET state = excluded.state`,
    ),
    insertEvent: db.prepare(`INSERT OR IGNORE INTO alert_events (id, account_id, rule_id, body) VALUES (?, ?, ?, ?)`),
    insertDelivery: db.prepare(
      `INSERT OR IGNORE INTO alert_deliveries (id, account_id, event_id, destination_id, state, next_attempt_at, created_at)
       SELECT @id, @account_id, @event_id, id, 'pending', @now, @now FROM alert_destinations
       WHERE id = @destination_id AND account_id = @account_id AND disabled_at IS NULL`,
    ),
    events: db.prepare(
      `SELECT body FROM alert_events WHERE account_id = @account_id AND (@rule_id IS NULL OR rule_id = @rule_id)
         AND seq < COALESCE((SELECT seq FROM alert_events WHERE id = @before AND account_id = @account_id), 9223372036854775807)
       ORDER BY seq DESC LIMIT @limit`,
    ).pluck(),
    event: db.prepare(`SELECT body FROM alert_events WHERE id = ? AND account_id = ?`).pluck(),
    takeLease: db.prepare(
      `INSERT INTO alert_leases (name, holder, until) VALUES (@name, @holder, @until)
       ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until = excluded.until
       WHERE alert_leases.holder = excluded.holder OR alert_leases.until <= @now`,
    ),
    insertDestination: db.prepare(
      `INSERT INTO alert_destinations (id, account_id, kind, name, url, emails, secrets, created_at)
       VALUES (@id, @account_id, @kind, @name, @url, @emails, @secrets, @created_at)`,
    ),
    destination: db.prepare(`SELECT * FROM alert_destinations WHERE id = ? AND account_id = ?`),
    destinations: db.prepare(`SELECT * FROM alert_destinations WHERE account_id = ? ORDER BY created_at, id`),
    deleteDestination: db.prepare(`DELETE FROM alert_destinations WHERE id = ? AND account_id = ?`),
    deletePendingOf: db.prepare(`DELETE FROM alert_deliveries WHERE destination_id = ? AND state = 'pending'`),
    setSecrets: db.prepare(`UPDATE alert_destinations SET secrets = ? WHERE id = ? AND account_id = ?`),
    enable: db.prepare(
      `UPDATE alert_destinations SET disabled_at = NULL, disabled_reason = '', failing_since = NULL WHERE id = ? AND account_id = ?`,
    ),
    deliveries: db.prepare(
      `SELECT * FROM alert_deliveries WHERE account_id = @account_id AND (@event_id IS NULL OR event_id = @event_id)
       ORDER BY seq DESC LIMIT @limit`,
    ),
    delivery: db.prepare(`SELECT * FROM alert_deliveries WHERE id = ?`),
    resend: db.prepare(
      `UPDATE alert_deliveries SET state = 'pending', next_attempt_at = @now, scheduled_attempts = 0, resent = 1
       WHERE id = @id AND account_id = @account_id`,
    ),
    claim: db.prepare(
      `UPDATE alert_deliveries SET claimed_by = @holder, claimed_until = @until
       WHERE seq IN (SELECT d.seq FROM alert_deliveries d JOIN alert_destinations t ON t.id = d.destination_id
                     WHERE d.state = 'pending' AND d.next_attempt_at <= @now AND d.claimed_until <= @now AND t.disabled_at IS NULL
                     ORDER BY d.next_attempt_at LIMIT @limit)
       RETURNING *`,
    ),
    anyDue: db.prepare(`SELECT 1 FROM alert_deliveries WHERE state = 'pending' AND next_attempt_at <= ? AND claimed_until <= ? LIMIT 1`).pluck(),
    record: db.prepare(
      `UPDATE alert_deliveries SET state = @state, next_attempt_at = @next, attempts = @attempts, scheduled_attempts = @scheduled,
         resent = 0, claimed_by = NULL, claimed_until = 0
       WHERE id = @id AND claimed_by = @holder`,
    ),
    healthy: db.prepare(`UPDATE alert_destinations SET failing_since = NULL WHERE id = ?`),
    failing: db.prepare(`UPDATE alert_destinations SET failing_since = COALESCE(failing_since, ?) WHERE id = ?`),
    disable: db.prepare(`UPDATE alert_destinations SET disabled_at = ?, disabled_reason = ? WHERE id = ?`),
  };

  const enqueue = db.transaction((event: AlertEvent, destinationIds: string[] | undefined): boolean => {
    const stored = s.insertEvent.run(event.id, event.projectId, event.ruleId, eventToJson(event)).changes > 0;
    if (!stored) return false;
    let targets = destinationIds;
    if (!targets) {
      const body = s.rule.get(event.ruleId, event.projectId) as string | undefined;
      const rule = body === undefined ? undefined : ruleFromJson(body);
      targets = rule && !rule.muted ? rule.destinationIds : [];
    }
    const now = Date.now();
    for (const destinationId of new Set(targets)) {
      s.insertDelivery.run({ id: deliveryId(event.id, destinationId), account_id: event.projectId, event_id: event.id, destination_id: destinationId, now });
    }
    return true;
  });

  const claim = db.transaction((holder: string, now: number, claimMs: number, limit: number): ClaimedDelivery[] => {
    const rows = s.claim.all({ holder, now, until: now + claimMs, limit }) as DeliveryRow[];
    return rows.map((row) => ({
      delivery: toDelivery(row),
      event: eventFromJson(s.event.get(row.event_id, row.account_id) as string),
      destination: toDestination(s.destination.get(row.destination_id, row.account_id) as DestinationRow),
    }));
  });

  const record = db.transaction((id: string, holder: string, result: Parameters<AlertStore["recordAttempt"]>[2]): boolean => {
    const row = s.delivery.get(id) as DeliveryRow | undefined;
    if (!row) return false;
    const attempts = [...parseAttempts(row.attempts), result.attempt];
    const changed = s.record.run({
      id,
      holder,
      state: result.state,
      next: result.nextAttemptAt?.getTime() ?? row.next_attempt_at,
      attempts: JSON.stringify(attempts),
      scheduled: row.scheduled_attempts + 1,
    }).changes;
    if (changed === 0) return false;
    if (result.attempt.outcome === "ok") s.healthy.run(row.destination_id);
    else s.failing.run(result.attempt.at.getTime(), row.destination_id);
    if (result.disableDestination) s.disable.run(result.disableDestination.at.getTime(), result.disableDestination.reason, row.destination_id);
    return true;
  });

  const deleteRule = db.transaction((projectId: string, ruleId: string): boolean => {
    const deleted = s.deleteRule.run(ruleId, projectId).changes > 0;
    if (deleted) s.deleteRuleState.run(ruleId);
    return deleted;
  });

  const deleteDestination = db.transaction((projectId: string, id: string): boolean => {
    const deleted = s.deleteDestination.run(id, projectId).changes > 0;
    if (deleted) s.deletePendingOf.run(id);
    return deleted;
  });

  const destinationOf = (projectId: string, id: string) => {
    const row = s.destination.get(id, projectId) as DestinationRow | undefined;
    return row && toDestination(row);
  };

  return {
    async createRule(rule) {
      s.insertRule.run(rule.id, rule.projectId, rule.createdAt ? timestampMs(rule.createdAt) : Date.now(), ruleToJson(rule));
    },
    async updateRule(rule) {
      return s.updateRule.run(ruleToJson(rule), rule.id, rule.projectId).changes > 0;
    },
    async deleteRule(projectId, ruleId) {
      return deleteRule.immediate(projectId, ruleId);
    },
    async getRule(projectId, ruleId) {
      const body = s.rule.get(ruleId, projectId) as string | undefined;
      return body === undefined ? undefined : ruleFromJson(body);
    },
    async listRules(projectId) {
      return (s.rules.all(projectId) as string[]).map(ruleFromJson);
    },
    async listAllRules() {
      return (s.allRules.all() as string[]).map(ruleFromJson);
    },
    async readRuleState(ruleId) {
      return s.readState.get(ruleId) as string | undefined;
    },
    async writeRuleState(ruleId, state) {
      s.writeState.run({ rule: ruleId, state });
    },
    async enqueueEvent(event, destinationIds) {
      // IMMEDIATE: committed (fsynced) before it resolves, and one writer at a time across processes.
      return enqueue.immediate(event, destinationIds);
    },
    async listEvents(projectId, page) {
      const bodies = s.events.all({ account_id: projectId, rule_id: page.ruleId ?? null, before: page.before ?? null, limit: page.limit }) as string[];
      return bodies.map(eventFromJson);
    },
    async getEvent(projectId, eventId) {
      const body = s.event.get(eventId, projectId) as string | undefined;
      return body === undefined ? undefined : eventFromJson(body);
    },
    async defaultSecretKey() {
      return keyFile(secretKeyFile);
    },
    async tryLease(name, holder, ttlMs) {
      const now = Date.now();
      return s.takeLease.run({ name, holder, until: now + ttlMs, now }).changes > 0;
    },
    async createDestination(d) {
      s.insertDestination.run({
        id: d.id,
        account_id: d.projectId,
        kind: d.kind,
        name: d.name,
        url: d.url,
        emails: JSON.stringify(d.emails),
        secrets: secretsToJson(d.secrets),
        created_at: d.createdAt.getTime(),
      });
      return destinationOf(d.projectId, d.id)!;
    },
    async getDestination(projectId, id) {
      return destinationOf(projectId, id);
    },
    async listDestinations(projectId) {
      return (s.destinations.all(projectId) as DestinationRow[]).map(toDestination);
    },
    async deleteDestination(projectId, id) {
      return deleteDestination.immediate(projectId, id);
    },
    async setDestinationSecrets(projectId, id, secrets) {
      if (s.setSecrets.run(secretsToJson(secrets), id, projectId).changes === 0) return undefined;
      return destinationOf(projectId, id);
    },
    async enableDestination(projectId, id) {
      if (s.enable.run(id, projectId).changes === 0) return undefined;
      return destinationOf(projectId, id);
    },
    async listDeliveries(projectId, page) {
      return (s.deliveries.all({ account_id: projectId, event_id: page.eventId ?? null, limit: page.limit }) as DeliveryRow[]).map(toDelivery);
    },
    async resendDelivery(projectId, id) {
      if (s.resend.run({ id, account_id: projectId, now: Date.now() }).changes === 0) return undefined;
      return toDelivery(s.delivery.get(id) as DeliveryRow);
    },
    async claimDueDeliveries(holder, now, claimMs, limit) {
      // A read first: the worker asks every second, and most of the time nothing is due, so it
      // takes the write lock (which trace commits wait on) only when there is work.
      if (s.anyDue.get(now.getTime(), now.getTime()) === undefined) return [];
      return claim.immediate(holder, now.getTime(), claimMs, limit);
    },
    async recordAttempt(id, holder, result) {
      return record.immediate(id, holder, result);
    },
  };
}

function toDestination(row: DestinationRow): DestinationRecord {
  return {
    id: row.id,
    projectId: row.account_id,
    kind: row.kind as DestinationKind,
    name: row.name,
    url: row.url,
    emails: JSON.parse(row.emails) as string[],
    secrets: secretsFromJson(row.secrets),
    createdAt: new Date(row.created_at),
    failingSince: row.failing_since === null ? undefined : new Date(row.failing_since),
    disabledAt: row.disabled_at === null ? undefined : new Date(row.disabled_at),
    disabledReason: row.disabled_reason,
  };
}

function toDelivery(row: DeliveryRow): DeliveryRecord {
  return {
    id: row.id,
    projectId: row.account_id,
    eventId: row.event_id,
    destinationId: row.destination_id,
    state: row.state as DeliveryState,
    nextAttemptAt: new Date(row.next_attempt_at),
    scheduledAttempts: row.scheduled_attempts,
    attempts: parseAttempts(row.attempts),
    createdAt: new Date(row.created_at),
    resent: row.resent === 1,
  };
}

function parseAttempts(json: string): DeliveryAttempt[] {
  return (JSON.parse(json) as Array<DeliveryAttempt & { at: string }>).map((a) => ({ ...a, at: new Date(a.at) }));
}

function secretsToJson(secrets: StoredSecret[]): string {
  return JSON.stringify(secrets.map((x) => ({ sealed: x.sealed, createdAt: x.createdAt.getTime(), expiresAt: x.expiresAt?.getTime() ?? null })));
}

function secretsFromJson(json: string): StoredSecret[] {
  return (JSON.parse(json) as Array<{ sealed: string; createdAt: number; expiresAt: number | null }>).map((x) => ({
    sealed: x.sealed,
    createdAt: new Date(x.createdAt),
    expiresAt: x.expiresAt === null ? undefined : new Date(x.expiresAt),
  }));
}
