import { MongoServerError } from "mongodb";
import { KeyLimitError, type KeyStore } from "../key-store.js";
import { newId } from "../ids.js";
import type { ApiKeyRecord } from "../records.js";
import type { AccountDoc, KeyDoc, MongoCollections } from "./mongo-collections.js";

/**
 * Accounts and API keys in ordinary collections; a key's plan is read from its account.
 * `timeoutMs` bounds the lookups on the ingest path, so a server that stops answering turns
 * into a 503 rather than a request that hangs.
 */
export function mongoKeyStore(c: MongoCollections, { timeoutMs }: { timeoutMs: number }): KeyStore {
  const withPlans = async (docs: KeyDoc[], timeoutMS = timeoutMs): Promise<ApiKeyRecord[]> => {
    const accountIds = [...new Set(docs.map((d) => d.accountId))];
    const accounts = new Map((await c.accounts.find({ _id: { $in: accountIds } }, { timeoutMS }).toArray()).map((a) => [a._id, a]));
    return docs.map((d) => toKey(d, accounts.get(d.accountId)));
  };
  const one = async (doc: KeyDoc | null, timeoutMS?: number) => (doc ? (await withPlans([doc], timeoutMS))[0] : undefined);

  return {
    async createKey({ accountId, name, scope, hash, prefix, expiresAt, maxActive }) {
      const now = new Date();
      if (maxActive !== undefined) {
        // Keys made before slots existed hold none: the count catches them.
        const active = await c.keys.countDocuments({
          accountId,
          revokedAt: { $exists: false },
          $or: [{ expiresAt: { $exists: false } }, { expiresAt: { $gt: now } }],
        });
        if (active >= maxActive) throw new KeyLimitError(maxActive);
      }
      const doc: KeyDoc = {
        _id: newId("key"),
        accountId,
        name,
        prefix,
        hash,
        createdAt: now,
        scope: scope ?? "ingest",
        ...(expiresAt ? { expiresAt } : {}),
      };
      await c.keys.insertOne(doc);
      if (maxActive !== undefined) {
        try {
          await takeKeySlot(c, accountId, doc._id, maxActive);
        } catch (error) {
          await c.keys.deleteOne({ _id: doc._id });
          throw error;
        }
      }
      return (await one(doc))!;
    },
    async findKeyByHash(hash, within = timeoutMs) {
      // Two reads, the key and then its account, sharing one bound.
      const until = performance.now() + Math.min(within, timeoutMs);
      const left = () => Math.max(1, Math.round(until - performance.now()));
      return one(await c.keys.findOne({ hash }, { timeoutMS: left() }), left());
    },
    async listKeys(accountId) {
      return withPlans(await c.keys.find(accountId === undefined ? {} : { accountId }).sort({ createdAt: 1, _id: 1 }).toArray());
    },
    async revokeKey(idOrPrefix) {
      let doc = await c.keys.findOne({ _id: idOrPrefix });
      if (!doc) {
        const byPrefix = await c.keys.find({ prefix: idOrPrefix }).limit(2).toArray();
        if (byPrefix.length !== 1) return undefined;
        doc = byPrefix[0]!;
      }
      await c.keys.updateOne({ _id: doc._id, revokedAt: { $exists: false } }, { $set: { revokedAt: new Date() } });
      return one(await c.keys.findOne({ _id: doc._id }));
    },
    async renameKey(id, name) {
      return one(await c.keys.findOneAndUpdate({ _id: id }, { $set: { name } }, { returnDocument: "after" }));
    },
  };
}

/**
 * Takes one of the account's `maxActive` key slots for the key (already inserted), or throws
 * KeyLimitError. A slot is a document whose _id is `<account>:<n>`: the unique _id is the one
 * atomic guard every MongoDB-compatible server has, so simultaneous creations on any number of
 * instances never hold more slots than allowed. Slots of revoked, expired or deleted keys are
 * freed when all are taken.
 */
async function takeKeySlot(c: MongoCollections, accountId: string, keyId: string, maxActive: number): Promise<void> {
  for (let round = 0; round < 2; round++) {
    for (let slot = 0; slot < maxActive; slot++) {
      try {
        await c.keySlots.insertOne({ _id: `${accountId}:${slot}`, accountId, keyId });
        return;
      } catch (error) {
        if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
      }
    }
    const slots = await c.keySlots.find({ accountId }).toArray();
    const now = new Date();
    const holders = await c.keys.find({ _id: { $in: slots.map((s) => s.keyId) } }).toArray();
    const active = new Set(holders.filter((k) => !k.revokedAt && (!k.expiresAt || k.expiresAt > now)).map((k) => k._id));
    for (const s of slots) if (!active.has(s.keyId)) await c.keySlots.deleteOne({ _id: s._id, keyId: s.keyId });
  }
  throw new KeyLimitError(maxActive);
}

function toKey(doc: KeyDoc, account: AccountDoc | undefined): ApiKeyRecord {
  return {
    id: doc._id,
    accountId: doc.accountId,
    // A key whose account is gone has no plan, and so no limits: the pipeline refuses it.
    plan: account?.plan ?? "",
    ...(account?.retentionDays ? { retentionDays: account.retentionDays } : {}),
    scope: doc.scope === "read" ? "read" : "ingest",
    name: doc.name,
    prefix: doc.prefix,
    hash: doc.hash,
    createdAt: doc.createdAt,
    revokedAt: doc.revokedAt ?? undefined,
    lastUsedAt: doc.lastUsedAt ?? undefined,
    expiresAt: doc.expiresAt ?? undefined,
  };
}
