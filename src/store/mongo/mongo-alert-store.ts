import { randomBytes } from "node:crypto";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { MongoServerError } from "mongodb";
import type { AlertStore, ClaimedDelivery, DeliveryRecord, DeliveryState, DestinationKind, DestinationRecord, StoredSecret } from "../alert-store.js";
import { deliveryId, eventFromJson, eventToJson, ruleFromJson, ruleToJson } from "../alert-json.js";
import { type AlertDeliveryDoc, type AlertDestinationDoc, ensureSetting, type MongoCollections } from "./mongo-collections.js";

const isDuplicate = (error: unknown) => error instanceof MongoServerError && error.code === 11000;

/** Inserts `doc`; false when its _id is taken (another instance won). */
async function insertFirst<T>(insert: () => Promise<T>): Promise<boolean> {
  try {
    await insert();
    return true;
  } catch (error) {
    if (isDuplicate(error)) return false;
    throw error;
  }
}

/**
 * Alerts in ordinary collections. Not every MongoDB-compatible server has transactions or atomic
 * conditional updates (FerretDB 1.24 reads, then writes), so whatever instances compete for is
 * decided by inserting a document under a unique _id: a delivery attempt's claim, a lease's term.
 * Without transactions the outbox writes the event, then its deliveries under ids derived from
 * it; an enqueue interrupted between the two is completed by repeating it.
 */
export function mongoAlertStore(c: MongoCollections): AlertStore {
  const destinationOf = async (projectId: string, id: string) => {
    const doc = await c.alertDestinations.findOne({ _id: id, accountId: projectId });
    return doc ? toDestination(doc) : undefined;
  };
  /** The latest claim on a delivery's attempt number `generation`. */
  const latestClaim = (id: string, generation: number) =>
    c.alertClaims.find({ deliveryId: id, generation }).sort({ takeover: -1 }).limit(1).next();

  return {
    async createRule(rule) {
      await c.alertRules.insertOne({
        _id: rule.id,
        accountId: rule.projectId,
        createdAt: rule.createdAt ? timestampDate(rule.createdAt) : new Date(),
        body: ruleToJson(rule),
      });
    },
    async updateRule(rule) {
      return (await c.alertRules.updateOne({ _id: rule.id, accountId: rule.projectId }, { $set: { body: ruleToJson(rule) } })).matchedCount > 0;
    },
    async deleteRule(projectId, ruleId) {
      const deleted = (await c.alertRules.deleteOne({ _id: ruleId, accountId: projectId })).deletedCount > 0;
      if (deleted) await c.alertRuleState.deleteOne({ _id: ruleId });
      return deleted;
    },
    async getRule(projectId, ruleId) {
      const doc = await c.alertRules.findOne({ _id: ruleId, accountId: projectId });
      return doc ? ruleFromJson(doc.body) : undefined;
    },
    async listRules(projectId) {
      return (await c.alertRules.find({ accountId: projectId }).sort({ createdAt: 1, _id: 1 }).toArray()).map((d) => ruleFromJson(d.body));
    },
    async listAllRules() {
      return (await c.alertRules.find({}).sort({ createdAt: 1, _id: 1 }).toArray()).map((d) => ruleFromJson(d.body));
    },
    async readRuleState(ruleId) {
      return (await c.alertRuleState.findOne({ _id: ruleId }))?.state;
    },
    async writeRuleState(ruleId, state) {
      const rule = await c.alertRules.findOne({ _id: ruleId }, { projection: { accountId: 1 } });
      if (!rule) return;
      await c.alertRuleState.replaceOne({ _id: ruleId }, { accountId: rule.accountId, state }, { upsert: true });
    },
    async enqueueEvent(event, destinationIds) {
      const stored = await insertFirst(() =>
        c.alertEvents.insertOne({ _id: event.id, accountId: event.projectId, ruleId: event.ruleId, firedAt: new Date(), body: eventToJson(event) }),
      );
      let targets = destinationIds;
      if (!targets) {
        const doc = await c.alertRules.findOne({ _id: event.ruleId, accountId: event.projectId });
        const rule = doc ? ruleFromJson(doc.body) : undefined;
        targets = rule && !rule.muted ? rule.destinationIds : [];
      }
      const live = await c.alertDestinations
        .find({ _id: { $in: [...new Set(targets)] }, accountId: event.projectId, disabledAt: null })
        .project<{ _id: string }>({ _id: 1 })
        .toArray();
      const now = new Date();
      // A repeat (or an interrupted first call) inserts only the deliveries still missing.
      for (const destination of live) {
        await insertFirst(() =>
          c.alertDeliveries.insertOne({
            _id: deliveryId(event.id, destination._id),
            accountId: event.projectId,
            eventId: event.id,
            destinationId: destination._id,
            state: "pending",
            nextAttemptAt: now,
            scheduledAttempts: 0,
            attempts: [],
            resent: false,
            createdAt: now,
          }),
        );
      }
      return stored;
    },
    async listEvents(projectId, page) {
      const filter: Record<string, unknown> = { accountId: projectId };
      if (page.ruleId !== undefined) filter.ruleId = page.ruleId;
      if (page.before !== undefined) {
        const before = await c.alertEvents.findOne({ _id: page.before, accountId: projectId });
        if (before) filter.$or = [{ firedAt: { $lt: before.firedAt } }, { firedAt: before.firedAt, _id: { $lt: before._id } }];
      }
      const docs = await c.alertEvents.find(filter).sort({ firedAt: -1, _id: -1 }).limit(page.limit).toArray();
      return docs.map((d) => eventFromJson(d.body));
    },
    async getEvent(projectId, eventId) {
      const doc = await c.alertEvents.findOne({ _id: eventId, accountId: projectId });
      return doc ? eventFromJson(doc.body) : undefined;
    },
    async defaultSecretKey() {
      return Buffer.from(await ensureSetting(c.db, "alert_secret_key", () => randomBytes(32).toString("base64")), "base64");
    },
    async tryLease(name, holder, ttlMs) {
      const now = new Date();
      const latest = await c.alertLeases.find({ name }).sort({ term: -1 }).limit(1).next();
      if (latest && latest.holder !== holder && latest.until > now) return false;
      const term = (latest?.term ?? 0) + 1;
      // Taking and renewing alike insert the next term: of two instances racing for it, one wins.
      const won = await insertFirst(() =>
        c.alertLeases.insertOne({ _id: `${name}:${term}`, name, term, holder, until: new Date(now.getTime() + ttlMs) }),
      );
      if (won) await c.alertLeases.deleteMany({ name, term: { $lt: term - 1 } });
      return won;
    },
    async createDestination(d) {
      const doc: AlertDestinationDoc = {
        _id: d.id,
        accountId: d.projectId,
        kind: d.kind,
        name: d.name,
        url: d.url,
        emails: d.emails,
        secrets: secretsToDocs(d.secrets),
        createdAt: d.createdAt,
        failingSince: null,
        disabledAt: null,
        disabledReason: "",
      };
      await c.alertDestinations.insertOne(doc);
      return toDestination(doc);
    },
    getDestination: destinationOf,
    async listDestinations(projectId) {
      return (await c.alertDestinations.find({ accountId: projectId }).sort({ createdAt: 1, _id: 1 }).toArray()).map(toDestination);
    },
    async deleteDestination(projectId, id) {
      const deleted = (await c.alertDestinations.deleteOne({ _id: id, accountId: projectId })).deletedCount > 0;
      if (deleted) await c.alertDeliveries.deleteMany({ destinationId: id, state: "pending" });
      return deleted;
    },
    async setDestinationSecrets(projectId, id, secrets) {
      const result = await c.alertDestinations.updateOne({ _id: id, accountId: projectId }, { $set: { secrets: secretsToDocs(secrets) } });
      return result.matchedCount > 0 ? destinationOf(projectId, id) : undefined;
    },
    async enableDestination(projectId, id) {
      const result = await c.alertDestinations.updateOne(
        { _id: id, accountId: projectId },
        { $set: { disabledAt: null, disabledReason: "", failingSince: null } },
      );
      return result.matchedCount > 0 ? destinationOf(projectId, id) : undefined;
    },
    async listDeliveries(projectId, page) {
      const filter: Record<string, unknown> = { accountId: projectId };
      if (page.eventId !== undefined) filter.eventId = page.eventId;
      return (await c.alertDeliveries.find(filter).sort({ createdAt: -1, _id: -1 }).limit(page.limit).toArray()).map(toDelivery);
    },
    async resendDelivery(projectId, id) {
      const result = await c.alertDeliveries.updateOne(
        { _id: id, accountId: projectId },
        { $set: { state: "pending", nextAttemptAt: new Date(), scheduledAttempts: 0, resent: true } },
      );
      if (result.matchedCount === 0) return undefined;
      const doc = await c.alertDeliveries.findOne({ _id: id });
      return doc ? toDelivery(doc) : undefined;
    },
    async claimDueDeliveries(holder, now, claimMs, limit) {
      // A disabled destination's deliveries wait; left in the query they would fill the head of the queue.
      const disabled = (await c.alertDestinations.find({ disabledAt: { $ne: null } }).project<{ _id: string }>({ _id: 1 }).toArray()).map((d) => d._id);
      const due = await c.alertDeliveries
        .find({ state: "pending", nextAttemptAt: { $lte: now }, ...(disabled.length > 0 ? { destinationId: { $nin: disabled } } : {}) })
        .sort({ nextAttemptAt: 1 })
        .limit(limit * 4)
        .toArray();
      const claimed: ClaimedDelivery[] = [];
      for (const doc of due) {
        if (claimed.length >= limit) break;
        const generation = doc.attempts.length;
        const latest = await latestClaim(doc._id, generation);
        if (latest && latest.until > now) continue;
        const destination = await c.alertDestinations.findOne({ _id: doc.destinationId, accountId: doc.accountId });
        if (!destination || destination.disabledAt) continue;
        const takeover = latest ? latest.takeover + 1 : 0;
        const won = await insertFirst(() =>
          c.alertClaims.insertOne({
            _id: `${doc._id}:${generation}:${takeover}`,
            accountId: doc.accountId,
            deliveryId: doc._id,
            generation,
            takeover,
            holder,
            until: new Date(now.getTime() + claimMs),
          }),
        );
        if (!won) continue;
        // Another instance may have made this attempt between the read above and the claim.
        const fresh = await c.alertDeliveries.findOne({ _id: doc._id });
        if (fresh?.state !== "pending" || fresh.attempts.length !== generation) continue;
        const event = await c.alertEvents.findOne({ _id: fresh.eventId });
        if (!event) continue;
        claimed.push({ delivery: toDelivery(fresh), event: eventFromJson(event.body), destination: toDestination(destination) });
      }
      return claimed;
    },
    async recordAttempt(id, holder, result) {
      const doc = await c.alertDeliveries.findOne({ _id: id });
      if (!doc) return false;
      const generation = doc.attempts.length;
      const claim = await latestClaim(id, generation);
      if (!claim || claim.holder !== holder) return false;
      await c.alertDeliveries.updateOne(
        { _id: id, attempts: { $size: generation } },
        {
          $set: { state: result.state, nextAttemptAt: result.nextAttemptAt ?? doc.nextAttemptAt, scheduledAttempts: doc.scheduledAttempts + 1, resent: false },
          $push: { attempts: { ...result.attempt } },
        },
      );
      await c.alertClaims.deleteMany({ deliveryId: id, generation: { $lte: generation } });
      const at = result.attempt.at;
      if (result.attempt.outcome === "ok") await c.alertDestinations.updateOne({ _id: doc.destinationId }, { $set: { failingSince: null } });
      else await c.alertDestinations.updateOne({ _id: doc.destinationId, failingSince: null }, { $set: { failingSince: at } });
      if (result.disableDestination) {
        const { at: disabledAt, reason } = result.disableDestination;
        await c.alertDestinations.updateOne({ _id: doc.destinationId }, { $set: { disabledAt, disabledReason: reason } });
      }
      return true;
    },
  };
}

function toDestination(doc: AlertDestinationDoc): DestinationRecord {
  return {
    id: doc._id,
    projectId: doc.accountId,
    kind: doc.kind as DestinationKind,
    name: doc.name,
    url: doc.url,
    emails: doc.emails,
    secrets: doc.secrets.map((x) => ({ sealed: x.sealed, createdAt: x.createdAt, expiresAt: x.expiresAt ?? undefined })),
    createdAt: doc.createdAt,
    failingSince: doc.failingSince ?? undefined,
    disabledAt: doc.disabledAt ?? undefined,
    disabledReason: doc.disabledReason,
  };
}

function toDelivery(doc: AlertDeliveryDoc): DeliveryRecord {
  return {
    id: doc._id,
    projectId: doc.accountId,
    eventId: doc.eventId,
    destinationId: doc.destinationId,
    state: doc.state as DeliveryState,
    nextAttemptAt: doc.nextAttemptAt,
    scheduledAttempts: doc.scheduledAttempts,
    attempts: doc.attempts.map((a) => ({ ...a, outcome: a.outcome as "ok", trigger: a.trigger as "schedule" })),
    createdAt: doc.createdAt,
    resent: doc.resent,
  };
}

function secretsToDocs(secrets: StoredSecret[]): AlertDestinationDoc["secrets"] {
  return secrets.map((x) => ({ sealed: x.sealed, createdAt: x.createdAt, expiresAt: x.expiresAt ?? null }));
}
