import type { KeyStore } from "../key-store.js";
import { newId } from "../ids.js";
import type { ApiKeyRecord } from "../records.js";
import type { AccountDoc, KeyDoc, MongoCollections } from "./mongo-collections.js";

/**
 * Accounts and API keys in ordinary collections; a key's plan is read from its account.
 * `timeoutMs` bounds the lookups on the ingest path, so a server that stops answering turns
 * into a 503 rather than a request that hangs.
 */
export function mongoKeyStore(c: MongoCollections, { timeoutMs }: { timeoutMs: number }): KeyStore {
  const withPlans = async (docs: KeyDoc[]): Promise<ApiKeyRecord[]> => {
    const accountIds = [...new Set(docs.map((d) => d.accountId))];
    const accounts = new Map((await c.accounts.find({ _id: { $in: accountIds } }, { timeoutMS: timeoutMs }).toArray()).map((a) => [a._id, a]));
    return docs.map((d) => toKey(d, accounts.get(d.accountId)));
  };
  const one = async (doc: KeyDoc | null) => (doc ? (await withPlans([doc]))[0] : undefined);

  return {
    async createAccount({ name, plan }) {
      const account: AccountDoc = { _id: newId("acc"), name, plan, createdAt: new Date() };
      await c.accounts.insertOne(account);
      return toAccount(account);
    },
    async getAccount(id) {
      const doc = await c.accounts.findOne({ _id: id });
      return doc ? toAccount(doc) : undefined;
    },
    async createKey({ accountId, name, hash, prefix }) {
      const doc: KeyDoc = { _id: newId("key"), accountId, name, prefix, hash, createdAt: new Date() };
      await c.keys.insertOne(doc);
      return (await one(doc))!;
    },
    async findKeyByHash(hash) {
      return one(await c.keys.findOne({ hash }, { timeoutMS: timeoutMs }));
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
  };
}

export function toAccount(doc: AccountDoc) {
  return { id: doc._id, name: doc.name, plan: doc.plan, createdAt: doc.createdAt };
}

function toKey(doc: KeyDoc, account: AccountDoc | undefined): ApiKeyRecord {
  return {
    id: doc._id,
    accountId: doc.accountId,
    // A key whose account is gone has no plan, and so no limits: the pipeline refuses it.
    plan: account?.plan ?? "",
    name: doc.name,
    prefix: doc.prefix,
    hash: doc.hash,
    createdAt: doc.createdAt,
    revokedAt: doc.revokedAt ?? undefined,
    lastUsedAt: doc.lastUsedAt ?? undefined,
  };
}
