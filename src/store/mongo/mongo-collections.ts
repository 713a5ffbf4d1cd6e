import { randomUUID } from "node:crypto";
import { MongoServerError, type Collection, type Db, type Document, type IndexDescription } from "mongodb";
import type { Price } from "../../../sdk/typescript/src/price-table.js";
import { newTraceIdKey } from "../trace-id.js";
import type { TraceDoc } from "./mongo-trace-doc.js";

/** A project (the collection keeps the name of the accounts that became projects, D50). */
export interface AccountDoc {
  _id: string;
  name: string;
  plan: string;
  createdAt: Date;
  /** Absent only in a database not yet upgraded (mongo-teams-upgrade.ts). */
  organizationId?: string;
  retentionDays?: number;
  timeZone?: string;
}

export interface OrganizationDoc {
  _id: string;
  name: string;
  createdAt: Date;
  joinDomain: string;
  joinRole: string;
}

export interface MembershipDoc {
  /** `<organization id>:<user id>`. */
  _id: string;
  organizationId: string;
  userId: string;
  role: string;
  createdAt: Date;
}

export interface InvitationDoc {
  _id: string;
  organizationId: string;
  email: string;
  role: string;
  tokenHash: string;
  invitedBy: string;
  createdAt: Date;
  expiresAt: Date;
  acceptedAt?: Date;
  revokedAt?: Date;
}

/** An invitation's one use, under its id: accepting and revoking both insert it, so only one happens. */
export interface InvitationUseDoc {
  _id: string;
  organizationId: string;
  kind: "accepted" | "revoked";
  at: Date;
}

export interface AuditDoc {
  _id: string;
  organizationId: string;
  projectId: string;
  actor: string;
  action: string;
  target: string;
  details: Record<string, string>;
  at: Date;
}

/** A project's custom price (src/store/price-store.ts); `accountId` names the project, so deleting it deletes these. */
export interface CustomPriceDoc {
  _id: string;
  accountId: string;
  provider: string;
  matchKind: string;
  pattern: string;
  /** In the catalog's shape (sdk/pricing/README.md). */
  price: Price;
  effectiveFrom?: Date;
  effectiveUntil?: Date;
  createdAt: Date;
  updatedAt: Date;
}

/** A re-price job of a project (src/pricing/reprice-job.ts). */
export interface RepriceJobDoc {
  _id: string;
  accountId: string;
  from: Date;
  until: Date;
  state: string;
  total: number;
  done: number;
  changed: number;
  cursor: string;
  error: string;
  createdAt: Date;
  updatedAt: Date;
}

/** One of an account's `max_keys` slots, held by an active key (mongo-key-store.ts). */
export interface KeySlotDoc {
  /** `<account id>:<slot number>`. */
  _id: string;
  accountId: string;
  keyId: string;
}

export interface KeyDoc {
  _id: string;
  accountId: string;
  name: string;
  prefix: string;
  hash: string;
  createdAt: Date;
  revokedAt?: Date;
  lastUsedAt?: Date;
  expiresAt?: Date;
  /** Absent for keys made before scopes: they are ingest keys. */
  scope?: string;
}

/**
 * One claimed Idempotency-Key (D14), or one imported trace's identity in its file: which trace it
 * was claimed for, and when. An Idempotency-Key expires with its window (the TTL index on
 * `createdAt`); an import's claim has `importedAt` in its place and is kept for good.
 */
export interface IdempotencyDoc {
  /** `<key id>:<Idempotency-Key>`, `otlp:<project id>:<OTLP call key>` (live or imported) or `import:<project id>:<import key>`. */
  _id: string;
  traceId: TraceDoc["_id"];
  createdAt?: Date;
  importedAt?: Date;
  /** An import's project, whose deletion deletes its claims. */
  accountId?: string;
  /** The X-Quota-Remaining of the first answer, which replays answer again (D23); absent when there was none or the claim predates it. */
  quotaRemaining?: number;
}

/** How many traces a key has stored in a UTC month, kept by the writers (mongo-trace-counts.ts). */
export interface TraceCountDoc {
  /** `<key id>:<YYYY-MM>:<writer id>`: each store instance counts in a document of its own. Before, `<key id>:<YYYY-MM>` for every writer. */
  _id: string;
  /** `<key id>:<YYYY-MM>`, whose documents add up to the month's count. Absent in the older, shared documents. */
  counter?: string;
  accountId: string;
  count: number;
}

/** A scope an alert rule watches (src/store/scope-counters.ts): counted by the writers for traces received from `since`. */
export interface ScopeWatchDoc {
  /** `<account id>|<scope>`. */
  _id: string;
  accountId: string;
  scope: string;
  since: Date;
  /** When the traces received before `since` were back-filled; absent until then. */
  backfilledAt?: Date;
}

/** One writer's (or the back-fill's) sums of a scope in one cell (mongo-scope-counters.ts). */
export interface ScopeCellDoc {
  /** `<account id>|<scope>|<resolution>|<start>|<writer id or "backfill">`. */
  _id: string;
  accountId: string;
  scope: string;
  resolution: number;
  start: number;
  calls: number;
  errors: number;
  costUsd: number;
  unpriced: number;
}

/** One writer's (or the back-fill's) calls of a scope in one minute and latency bucket. */
export interface ScopeLatencyDoc {
  /** `<account id>|<scope>|<start>|<bucket>|<writer id or "backfill">`. */
  _id: string;
  accountId: string;
  scope: string;
  start: number;
  bucket: number;
  calls: number;
}

/** One tracked value of a project's dimension on one UTC day (D54, mongo-value-bound.ts): slot `slot` of its scope. */
export interface GroupValueDoc {
  /** The scope and the slot number: the unique claim of the slot. */
  _id: string;
  /** `[account id, day number, dimension]` as JSON. */
  scope: string;
  slot: number;
  value: string;
  accountId: string;
  /** The start of the UTC day, when the document starts ageing out with the traces. */
  day: Date;
}

export interface UserDoc {
  _id: string;
  email: string;
  passwordHash: string;
  /** Only in a database not yet upgraded to teams (mongo-teams-upgrade.ts). */
  accountId?: string;
  createdAt: Date;
}

export interface SessionDoc {
  /** The session token's SHA-256. */
  _id: string;
  userId: string;
  createdAt: Date;
  expiresAt: Date;
  userAgent?: string;
}

/** An alert rule (its protobuf JSON), under its id. */
export interface AlertRuleDoc {
  _id: string;
  accountId: string;
  createdAt: Date;
  body: string;
}

/** The evaluator's opaque state of one rule. */
export interface AlertRuleStateDoc {
  _id: string;
  accountId: string;
  state: string;
}

export interface AlertDestinationDoc {
  _id: string;
  accountId: string;
  kind: string;
  name: string;
  url: string;
  emails: string[];
  secrets: Array<{ sealed: string; createdAt: Date; expiresAt: Date | null }>;
  createdAt: Date;
  failingSince: Date | null;
  disabledAt: Date | null;
  disabledReason: string;
}

/** A fired event (its protobuf JSON), under its id. */
export interface AlertEventDoc {
  _id: string;
  accountId: string;
  ruleId: string;
  firedAt: Date;
  body: string;
}

export interface AlertDeliveryDoc {
  /** `<event id>.<destination id>`. */
  _id: string;
  accountId: string;
  eventId: string;
  destinationId: string;
  state: string;
  nextAttemptAt: Date;
  scheduledAttempts: number;
  attempts: Array<{ at: Date; outcome: string; responseCode: number; durationMs: number; detail: string; trigger: string }>;
  resent: boolean;
  createdAt: Date;
}

/**
 * One claim on a delivery's next attempt: `<delivery id>:<attempts made>:<takeover>`. Inserting
 * it is the claim (the unique _id decides between instances); when it expires unused, the next
 * takeover number is inserted.
 */
export interface AlertClaimDoc {
  _id: string;
  accountId: string;
  deliveryId: string;
  generation: number;
  takeover: number;
  holder: string;
  until: Date;
}

/** One term of a lease: `<name>:<term>`; the highest term is the holder, each renewal inserts the next one. */
export interface AlertLeaseDoc {
  _id: string;
  name: string;
  term: number;
  holder: string;
  until: Date;
}

/** What the server turned out to support, found out at start-up (docs/mongodb.md). */
export interface MongoCapabilities {
  /** Traces live in a time-series collection; otherwise in an ordinary one with equivalent indexes. */
  timeSeries: boolean;
  /** The server deletes expired documents itself (TTL indexes or time-series expiry); otherwise the store does. */
  ttl: boolean;
  /**
   * A $group computes every accumulator it is given. FerretDB 1.24 computes only the first and
   * answers 0 for the rest, so there every sum gets an aggregation of its own.
   */
  manyAccumulators: boolean;
  /**
   * Concurrent $inc of one document all count. FerretDB 1.24 applies each as a read, then a
   * write, so concurrent ones overwrite each other (50 at once added 6); there this process sends
   * its trace_counts updates one at a time (mongo-trace-counts.ts), to documents of its own.
   */
  atomicIncrements: boolean;
}

export interface MongoCollections {
  /** The database itself, for what spans every collection (deleting an account). */
  db: Db;
  traces: Collection<TraceDoc>;
  accounts: Collection<AccountDoc>;
  keys: Collection<KeyDoc>;
  keySlots: Collection<KeySlotDoc>;
  idempotency: Collection<IdempotencyDoc>;
  /** Per key and month, what the monthly quota's rebuild reads instead of counting traces. */
  traceCounts: Collection<TraceCountDoc>;
  /** The scopes alert rules watch, and their counters (mongo-scope-counters.ts). */
  scopeWatches: Collection<ScopeWatchDoc>;
  scopeCells: Collection<ScopeCellDoc>;
  scopeLatency: Collection<ScopeLatencyDoc>;
  /** The values each project tracks per dimension and day (D54). */
  groupValues: Collection<GroupValueDoc>;
  /** This store instance's own, in the _id of the trace_counts documents it keeps. */
  writerId: string;
  /** When this database's writers began keeping traceCounts: traces before it are not in them. */
  countingSince: Date;
  users: Collection<UserDoc>;
  sessions: Collection<SessionDoc>;
  organizations: Collection<OrganizationDoc>;
  memberships: Collection<MembershipDoc>;
  invitations: Collection<InvitationDoc>;
  invitationUses: Collection<InvitationUseDoc>;
  audit: Collection<AuditDoc>;
  alertRules: Collection<AlertRuleDoc>;
  alertRuleState: Collection<AlertRuleStateDoc>;
  alertDestinations: Collection<AlertDestinationDoc>;
  alertEvents: Collection<AlertEventDoc>;
  alertDeliveries: Collection<AlertDeliveryDoc>;
  alertClaims: Collection<AlertClaimDoc>;
  alertLeases: Collection<AlertLeaseDoc>;
  customPrices: Collection<CustomPriceDoc>;
  repriceJobs: Collection<RepriceJobDoc>;
  /** The key of this database's trace ids (src/store/trace-id.ts), made once by whichever instance starts first. */
  traceIdKey: Buffer;
  capabilities: MongoCapabilities;
}

export interface PrepareOptions {
  /** Seconds a trace is kept; 0 keeps traces forever. */
  expireAfterSeconds: number;
  /** Use an ordinary traces collection even where time-series collections exist (tests of that mode). */
  timeSeries: boolean;
  /** How long an Idempotency-Key is remembered (D14). */
  idempotencyWindowSeconds: number;
}

/** Error codes by which servers refuse an option they do not have (NotImplemented, CommandNotSupported, InvalidOptions, BadValue, FailedToParse). */
const unsupportedCodes = new Set([238, 115, 72, 2, 9]);
const isUnsupported = (error: unknown, option: string) =>
  error instanceof MongoServerError && (unsupportedCodes.has(Number(error.code)) || error.message.includes(option));

/** The durable write concern of D13: acknowledged by a majority, in the journal. */
const journaled = { writeConcern: { w: "majority" as const, j: true } };

/**
 * Creates the collections and indexes if they are missing, so that any number of instances can
 * start at once against a fresh database. Detects time-series and TTL support by trying them.
 */
export async function prepareMongoCollections(db: Db, options: PrepareOptions): Promise<MongoCollections> {
  const timeSeries = options.timeSeries && (await ensureTracesCollection(db, options.expireAfterSeconds));
  const traces = db.collection<TraceDoc>("traces", journaled);
  let ttl = timeSeries;
  if (!timeSeries) {
    await ensureCollection(db, "traces");
    ttl = await ensureTtlIndex(traces, "receivedAt", options.expireAfterSeconds);
  }
  await ensureIndexes(traces, [
    { key: { "meta.accountId": 1, receivedAt: -1 }, name: "account_received" },
    { key: { "meta.accountId": 1, "meta.keyId": 1, receivedAt: -1 }, name: "account_key_received" },
    { key: { "meta.accountId": 1, "meta.model": 1, receivedAt: -1 }, name: "account_model_received" },
    // The spans of one OTLP trace, looked up together (one LLM call reported by nested spans is stored once).
    { key: { "meta.accountId": 1, otlpTraceId: 1 }, name: "account_otlp_trace" },
    // Attribution: pages of one user or session, and pages sorted by cost.
    { key: { "meta.accountId": 1, userId: 1, receivedAt: -1 }, name: "account_user_received" },
    { key: { "meta.accountId": 1, sessionId: 1, receivedAt: -1 }, name: "account_session_received" },
    { key: { "meta.accountId": 1, costUsd: -1 }, name: "account_cost" },
    // A project's longest latency (the Runs view bounds how far a call reaches from where it is placed).
    { key: { "meta.accountId": 1, latencyMs: -1 }, name: "account_latency" },
    ...(timeSeries ? [{ key: { receivedAt: 1 }, name: "received" }] : []),
  ]);

  const accounts = db.collection<AccountDoc>("accounts", journaled);
  const keys = db.collection<KeyDoc>("api_keys", journaled);
  const keySlots = db.collection<KeySlotDoc>("key_slots", journaled);
  const idempotency = db.collection<IdempotencyDoc>("idempotency", journaled);
  const traceCounts = db.collection<TraceCountDoc>("trace_counts", journaled);
  const scopeWatches = db.collection<ScopeWatchDoc>("scope_watches", journaled);
  const scopeCells = db.collection<ScopeCellDoc>("scope_cells", journaled);
  const scopeLatency = db.collection<ScopeLatencyDoc>("scope_latency_cells", journaled);
  const groupValues = db.collection<GroupValueDoc>("group_values", journaled);
  const users = db.collection<UserDoc>("users", journaled);
  const sessions = db.collection<SessionDoc>("sessions", journaled);
  const organizations = db.collection<OrganizationDoc>("organizations", journaled);
  const memberships = db.collection<MembershipDoc>("memberships", journaled);
  const invitations = db.collection<InvitationDoc>("invitations", journaled);
  const invitationUses = db.collection<InvitationUseDoc>("invitation_uses", journaled);
  const audit = db.collection<AuditDoc>("audit_log", journaled);
  const alertRules = db.collection<AlertRuleDoc>("alert_rules", journaled);
  const alertRuleState = db.collection<AlertRuleStateDoc>("alert_rule_state", journaled);
  const alertDestinations = db.collection<AlertDestinationDoc>("alert_destinations", journaled);
  const alertEvents = db.collection<AlertEventDoc>("alert_events", journaled);
  const alertDeliveries = db.collection<AlertDeliveryDoc>("alert_deliveries", journaled);
  const alertClaims = db.collection<AlertClaimDoc>("alert_claims", journaled);
  const alertLeases = db.collection<AlertLeaseDoc>("alert_leases", journaled);
  const customPrices = db.collection<CustomPriceDoc>("custom_prices", journaled);
  const repriceJobs = db.collection<RepriceJobDoc>("reprice_jobs", journaled);
  for (const name of [
    "accounts",
    "api_keys",
    "key_slots",
    "idempotency",
    "trace_counts",
    "scope_watches",
    "scope_cells",
    "scope_latency_cells",
    "group_values",
    "users",
    "sessions",
    "organizations",
    "memberships",
    "invitations",
    "invitation_uses",
    "audit_log",
    "alert_rules",
    "alert_rule_state",
    "alert_destinations",
    "alert_events",
    "alert_deliveries",
    "alert_claims",
    "alert_leases",
    "custom_prices",
    "reprice_jobs",
  ])
    await ensureCollection(db, name);
  await ensureIndexes(keys, [
    { key: { hash: 1 }, name: "hash", unique: true },
    { key: { accountId: 1 }, name: "account" },
    { key: { prefix: 1 }, name: "prefix" },
  ]);
  await ensureIndexes(users, [{ key: { email: 1 }, name: "email", unique: true }]);
  await ensureIndexes(sessions, [
    { key: { expiresAt: 1 }, name: "expires" },
    { key: { userId: 1 }, name: "user" },
  ]);
  await ensureIndexes(accounts, [
    { key: { createdAt: 1 }, name: "created" },
    { key: { organizationId: 1, createdAt: 1 }, name: "organization" },
  ]);
  await ensureIndexes(organizations, [{ key: { joinDomain: 1 }, name: "join_domain" }]);
  await ensureIndexes(memberships, [
    { key: { organizationId: 1, createdAt: 1 }, name: "organization" },
    { key: { userId: 1 }, name: "user" },
  ]);
  await ensureIndexes(invitations, [
    { key: { tokenHash: 1 }, name: "token", unique: true },
    { key: { organizationId: 1, createdAt: -1 }, name: "organization" },
  ]);
  await ensureIndexes(audit, [{ key: { organizationId: 1, at: -1, _id: -1 }, name: "organization_at" }]);
  await ensureIndexes(traceCounts, [{ key: { counter: 1 }, name: "counter" }]);
  await ensureIndexes(customPrices, [{ key: { accountId: 1, createdAt: 1 }, name: "account" }]);
  await ensureIndexes(repriceJobs, [{ key: { state: 1 }, name: "state" }]);
  await ensureIndexes(scopeWatches, [{ key: { accountId: 1 }, name: "account" }]);
  await ensureIndexes(scopeCells, [{ key: { accountId: 1, scope: 1, resolution: 1, start: 1 }, name: "scope_start" }]);
  await ensureIndexes(scopeLatency, [{ key: { accountId: 1, scope: 1, start: 1 }, name: "scope_start" }]);
  await ensureTtlIndex(idempotency, "createdAt", options.idempotencyWindowSeconds);
  await ensureIndexes(groupValues, [{ key: { scope: 1 }, name: "scope" }]);
  // A day's values are kept a day longer than its traces: the day is their start.
  if (options.expireAfterSeconds > 0) await ensureTtlIndex(groupValues, "day", options.expireAfterSeconds + 86_400);
  await ensureIndexes(alertRules, [{ key: { accountId: 1, createdAt: 1 }, name: "account" }]);
  await ensureIndexes(alertDestinations, [{ key: { accountId: 1, createdAt: 1 }, name: "account" }]);
  await ensureIndexes(alertEvents, [{ key: { accountId: 1, firedAt: -1, _id: -1 }, name: "account_fired" }]);
  await ensureIndexes(alertDeliveries, [
    { key: { state: 1, nextAttemptAt: 1 }, name: "due" },
    { key: { accountId: 1, createdAt: -1 }, name: "account" },
    { key: { eventId: 1 }, name: "event" },
  ]);
  await ensureIndexes(alertClaims, [{ key: { deliveryId: 1, generation: 1, takeover: -1 }, name: "delivery" }]);
  await ensureIndexes(alertLeases, [{ key: { name: 1, term: -1 }, name: "name_term" }]);

  return {
    db,
    traces,
    accounts,
    keys,
    keySlots,
    idempotency,
    traceCounts,
    scopeWatches,
    scopeCells,
    scopeLatency,
    groupValues,
    writerId: randomUUID(),
    // A database without traces has all of them counted; one that had traces before its writers
    // kept counts (an upgrade) has those counted from the traces, until their month is over.
    countingSince: await ensureSetting(db, "trace_counts_since", async () =>
      (await traces.findOne({}, { projection: { _id: 1 } })) ? new Date() : new Date(0),
    ),
    users,
    sessions,
    organizations,
    memberships,
    invitations,
    invitationUses,
    audit,
    alertRules,
    alertRuleState,
    alertDestinations,
    alertEvents,
    alertDeliveries,
    alertClaims,
    alertLeases,
    customPrices,
    repriceJobs,
    traceIdKey: Buffer.from(await ensureSetting(db, "trace_id_key", () => newTraceIdKey().toString("hex")), "hex"),
    capabilities: { timeSeries, ttl, manyAccumulators: await groupsComputeEveryAccumulator(db), atomicIncrements: await incrementsAreAtomic(db) },
  };
}

/**
 * Creates the indexes that are missing, one at a time. Asking FerretDB 1.24 to create several
 * indexes of which some exist already makes it drop the connection, so existing ones are skipped.
 */
async function ensureIndexes<T extends Document>(collection: Collection<T>, specs: IndexDescription[]): Promise<void> {
  const existing = new Set((await collection.listIndexes().toArray()).map((index) => index.name as string));
  for (const spec of specs) if (!existing.has(spec.name!)) await collection.createIndexes([spec]);
}

/** True when the traces collection is (or now is) a time-series collection. */
async function ensureTracesCollection(db: Db, expireAfterSeconds: number): Promise<boolean> {
  const existing = await db.listCollections({ name: "traces" }).toArray();
  if (existing.length > 0) {
    if (existing[0]!.type !== "timeseries") return false;
    // The retention may have changed since the collection was made.
    await db.command({ collMod: "traces", expireAfterSeconds: expireAfterSeconds > 0 ? expireAfterSeconds : "off" });
    return true;
  }
  try {
    await db.createCollection("traces", {
      timeseries: { timeField: "receivedAt", metaField: "meta", granularity: "seconds" },
      ...(expireAfterSeconds > 0 ? { expireAfterSeconds } : {}),
    });
    return true;
  } catch (error) {
    if (error instanceof MongoServerError && error.code === 48) return ensureTracesCollection(db, expireAfterSeconds); // another instance made it
    if (isUnsupported(error, "timeseries")) return false;
    throw error;
  }
}

/** Creates a collection unless it exists; true when this call made it. */
async function ensureCollection(db: Db, name: string): Promise<boolean> {
  try {
    await db.createCollection(name);
    return true;
  } catch (error) {
    if (error instanceof MongoServerError && error.code === 48) return false; // NamespaceExists
    throw error;
  }
}

/**
 * A TTL index on `field`, or a plain index where the server has no TTL indexes (the store then
 * deletes expired documents itself). True when the server expires documents.
 */
async function ensureTtlIndex<T extends Document>(collection: Collection<T>, field: string, expireAfterSeconds: number): Promise<boolean> {
  const ttlName = `${field}_ttl`;
  const indexes = await collection.listIndexes().toArray();
  const ttlIndex = indexes.find((index) => index.name === ttlName);
  const plainIndex = indexes.find((index) => index.name === field);
  if (ttlIndex && ttlIndex.expireAfterSeconds === expireAfterSeconds) return true;
  // The retention changed since the index was made: an index's options cannot be altered portably.
  if (ttlIndex) await collection.dropIndex(ttlName);
  if (expireAfterSeconds === 0) {
    if (!plainIndex) await collection.createIndex({ [field]: 1 }, { name: field });
    return false;
  }
  const createTtl = () => collection.createIndex({ [field]: 1 }, { name: ttlName, expireAfterSeconds });
  try {
    await createTtl();
  } catch (error) {
    // IndexOptionsConflict / IndexKeySpecsConflict: the plain index made while retention was 0.
    if (error instanceof MongoServerError && (error.code === 85 || error.code === 86) && plainIndex) {
      await collection.dropIndex(field);
      await createTtl();
      return true;
    }
    if (!isUnsupported(error, "expireAfterSeconds")) throw error;
    if (!plainIndex) await collection.createIndex({ [field]: 1 }, { name: field });
    return false;
  }
  return true;
}

/** A database-wide setting: inserted if missing (the first instance's wins), then read. */
export async function ensureSetting<T>(db: Db, id: string, initial: () => T | Promise<T>): Promise<T> {
  const settings = db.collection<{ _id: string; value: T }>("settings", journaled);
  const existing = await settings.findOne({ _id: id });
  if (existing) return existing.value;
  // Another instance inserting it at the same moment may win with a duplicate key error (FerretDB).
  await settings.updateOne({ _id: id }, { $setOnInsert: { value: await initial() } }, { upsert: true }).catch((error: unknown) => {
    if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
  });
  const doc = await settings.findOne({ _id: id });
  return doc!.value;
}

/**
 * Tries a two-accumulator $group on a scratch collection (see MongoCapabilities.manyAccumulators),
 * on documents of this instance's own, so that instances starting at once do not collide.
 */
async function groupsComputeEveryAccumulator(db: Db): Promise<boolean> {
  const probe = db.collection<{ _id: string; g: string; v: number }>("capability_probe");
  const g = randomUUID();
  await probe.insertMany([1, 2].map((v) => ({ _id: `${g}-${v}`, g, v })));
  try {
    const [group] = await probe
      .aggregate<{ n: number; v: number }>([{ $match: { g } }, { $group: { _id: "$g", n: { $sum: 1 }, v: { $sum: "$v" } } }])
      .toArray();
    return group?.n === 2 && group.v === 3;
  } finally {
    await probe.deleteMany({ g });
  }
}

/** Sends 20 concurrent $inc to a document of its own (see MongoCapabilities.atomicIncrements). */
async function incrementsAreAtomic(db: Db): Promise<boolean> {
  const probe = db.collection<{ _id: string; n: number }>("capability_probe");
  const _id = `inc-${randomUUID()}`;
  await probe.insertOne({ _id, n: 0 });
  try {
    await Promise.all(Array.from({ length: 20 }, () => probe.updateOne({ _id }, { $inc: { n: 1 } })));
    return (await probe.findOne({ _id }))?.n === 20;
  } finally {
    await probe.deleteOne({ _id });
  }
}
