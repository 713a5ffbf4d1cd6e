import type { AlertEvent, AlertRule } from "../../gen/calltrace/v1/alert_pb.js";

/**
 * Alert rules, their destinations, the events they fire and the outbox of deliveries
 * (docs/alerts.md). Every event is committed with one pending delivery per destination before
 * anything is sent; a delivery worker claims due deliveries one at a time, so across instances
 * each attempt is made by one of them.
 */

export type DestinationKind = "webhook" | "slack" | "email";

/** A webhook signing secret, encrypted with the alerts' secret key (src/alerts/secret-box.ts). */
export interface StoredSecret {
  /** `iv.tag.ciphertext`, each base64url (AES-256-GCM). */
  sealed: string;
  createdAt: Date;
  /** While a rotation's overlap lasts, the old secret has its end; the current one has none. */
  expiresAt: Date | undefined;
}

export interface DestinationRecord {
  id: string;
  projectId: string;
  kind: DestinationKind;
  name: string;
  /** The webhook's or Slack incoming webhook's URL; "" for email. */
  url: string;
  /** For email: the recipients' addresses. */
  emails: string[];
  /** Webhooks only: the current secret first, then one still valid during a rotation. */
  secrets: StoredSecret[];
  createdAt: Date;
  /** Since when every attempt has failed (cleared by a success); undefined while it works. */
  failingSince: Date | undefined;
  /** Set when it was disabled after failing for too long; deliveries to it are no longer attempted. */
  disabledAt: Date | undefined;
  disabledReason: string;
}

export type NewDestination = Omit<DestinationRecord, "failingSince" | "disabledAt" | "disabledReason">;

export type DeliveryState = "pending" | "delivered" | "failed";

/** One attempt at sending a delivery, as the delivery log shows it. */
export interface DeliveryAttempt {
  at: Date;
  /** "ok" for a 2xx; otherwise why it failed. */
  outcome: "ok" | "http_error" | "timeout" | "network_error";
  /** The HTTP status, 0 when there was no response. */
  responseCode: number;
  durationMs: number;
  /** A short reason (never a secret): the error's message, or the start of the response body. */
  detail: string;
  /** Who asked for it: the schedule, or a person's resend. */
  trigger: "schedule" | "resend";
}

export interface DeliveryRecord {
  /** `<event id>.<destination id>`: one delivery per event and destination, whatever retries the enqueue. */
  id: string;
  projectId: string;
  eventId: string;
  destinationId: string;
  state: DeliveryState;
  /** When it is due next (pending only). */
  nextAttemptAt: Date;
  /** Attempts made since it was enqueued or last resent (a resend starts the retry schedule over). */
  scheduledAttempts: number;
  attempts: DeliveryAttempt[];
  createdAt: Date;
  /** Set by a resend, for the next attempt's log entry. */
  resent: boolean;
}

/** A delivery claimed by one worker, with the event it carries and where it goes. */
export interface ClaimedDelivery {
  delivery: DeliveryRecord;
  event: AlertEvent;
  destination: DestinationRecord;
}

/** What became of an attempt, which the worker records under its claim. */
export interface AttemptResult {
  attempt: DeliveryAttempt;
  /** "pending" with `nextAttemptAt` to retry, or final. */
  state: DeliveryState;
  nextAttemptAt?: Date | undefined;
  /** A failure marks the destination failing since this attempt (unless it was already); a success clears it. */
  disableDestination?: { at: Date; reason: string } | undefined;
}

export interface EventPage {
  ruleId?: string | undefined;
  limit: number;
  /** An event id from an earlier page: only older events. */
  before?: string | undefined;
}

export interface AlertStore {
  createRule(rule: AlertRule): Promise<void>;
  /** Replaces the rule with this id in its project; false when there is none. */
  updateRule(rule: AlertRule): Promise<boolean>;
  /** Deletes the rule and its evaluation state; its events and deliveries stay in the history. */
  deleteRule(projectId: string, ruleId: string): Promise<boolean>;
  getRule(projectId: string, ruleId: string): Promise<AlertRule | undefined>;
  /** Oldest first. */
  listRules(projectId: string): Promise<AlertRule[]>;
  /** Every project's rules, for the evaluator. */
  listAllRules(): Promise<AlertRule[]>;
  /** The opaque JSON the evaluator keeps per rule; undefined before the first write. */
  readRuleState(ruleId: string): Promise<string | undefined>;
  /** Ignored when the rule does not exist (deleted meanwhile). */
  writeRuleState(ruleId: string, state: string): Promise<void>;

  /**
   * The outbox. Commits the event and one pending delivery per destination of its rule (or of
   * `destinationIds`, for a test event) that exists and is not disabled, before it resolves; a
   * muted rule's event is recorded without deliveries. Idempotent by event id: a second call
   * resolves false and stores no second event.
   */
  enqueueEvent(event: AlertEvent, destinationIds?: string[]): Promise<boolean>;
  /** Firing history, newest first. */
  listEvents(projectId: string, page: EventPage): Promise<AlertEvent[]>;
  getEvent(projectId: string, eventId: string): Promise<AlertEvent | undefined>;

  /** The key that seals webhook secrets when ALERT_SECRET_KEY is not set: made once, kept by the store. */
  defaultSecretKey(): Promise<Buffer>;

  /** True when `holder` holds the lease `name` until now + ttlMs (taken, renewed, or taken over once expired). */
  tryLease(name: string, holder: string, ttlMs: number): Promise<boolean>;

  createDestination(destination: NewDestination): Promise<DestinationRecord>;
  getDestination(projectId: string, id: string): Promise<DestinationRecord | undefined>;
  /** Oldest first. */
  listDestinations(projectId: string): Promise<DestinationRecord[]>;
  /** Deletes it and its pending deliveries; false when there is none. Rules naming it keep its id and skip it. */
  deleteDestination(projectId: string, id: string): Promise<boolean>;
  /** Replaces its secrets (a rotation); undefined when there is none. */
  setDestinationSecrets(projectId: string, id: string, secrets: StoredSecret[]): Promise<DestinationRecord | undefined>;
  /** Enables a disabled destination again and forgets its failures; undefined when there is none. */
  enableDestination(projectId: string, id: string): Promise<DestinationRecord | undefined>;

  /** One project's deliveries, newest first, optionally of one event. */
  listDeliveries(projectId: string, page: { eventId?: string | undefined; limit: number }): Promise<DeliveryRecord[]>;
  /** Makes a delivery due now again (at any state), keeping its log; undefined when there is none. */
  resendDelivery(projectId: string, id: string): Promise<DeliveryRecord | undefined>;
  /**
   * Claims up to `limit` pending deliveries due at `now` that no live claim holds, for `holder`
   * until now + claimMs; no other holder gets them meanwhile.
   */
  claimDueDeliveries(holder: string, now: Date, claimMs: number, limit: number): Promise<ClaimedDelivery[]>;
  /** Records an attempt made under `holder`'s claim and releases it; false when the claim was lost (nothing recorded). */
  recordAttempt(deliveryId: string, holder: string, result: AttemptResult): Promise<boolean>;
}
