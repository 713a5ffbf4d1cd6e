import { MongoServerError } from "mongodb";
import { newId } from "../ids.js";
import { EmailTakenError, type SessionRecord, type UserRecord, type UserStore } from "../user-store.js";
import type { AccountDoc, MongoCollections, SessionDoc, UserDoc } from "./mongo-collections.js";
import { toAccount } from "./mongo-key-store.js";

/** Dashboard users and sessions in ordinary collections (email unique). */
export function mongoUserStore(c: MongoCollections): UserStore {
  return {
    async createUserWithAccount({ email, passwordHash, accountName, plan }) {
      const createdAt = new Date();
      const account: AccountDoc = { _id: newId("acc"), name: accountName, plan, createdAt };
      const user: UserDoc = { _id: newId("usr"), email, passwordHash, accountId: account._id, createdAt };
      // No transactions on every server: the user goes first, so a taken email leaves nothing behind;
      // should the account insert fail, the user is removed again.
      try {
        await c.users.insertOne(user);
      } catch (error) {
        if (error instanceof MongoServerError && error.code === 11000) throw new EmailTakenError();
        throw error;
      }
      try {
        await c.accounts.insertOne(account);
      } catch (error) {
        await c.users.deleteOne({ _id: user._id }).catch(() => {});
        throw error;
      }
      return { user: toUser(user), account: toAccount(account) };
    },
    async findUserByEmail(email) {
      const doc = await c.users.findOne({ email });
      return doc ? toUser(doc) : undefined;
    },
    async getUser(id) {
      const doc = await c.users.findOne({ _id: id });
      return doc ? toUser(doc) : undefined;
    },
    async createSession(s) {
      await c.sessions.insertOne({
        _id: s.tokenHash,
        userId: s.userId,
        accountId: s.accountId,
        createdAt: s.createdAt,
        expiresAt: s.expiresAt,
        userAgent: s.userAgent,
      });
    },
    async findSession(tokenHash) {
      const doc = await c.sessions.findOne({ _id: tokenHash });
      return doc ? toSession(doc) : undefined;
    },
    async listSessions(userId) {
      return (await c.sessions.find({ userId }).sort({ createdAt: -1 }).toArray()).map(toSession);
    },
    async deleteUserSessions(userId, keepTokenHash) {
      const filter = keepTokenHash === undefined ? { userId } : { userId, _id: { $ne: keepTokenHash } };
      return (await c.sessions.deleteMany(filter)).deletedCount;
    },
    async setPasswordHash(userId, passwordHash) {
      return (await c.users.updateOne({ _id: userId }, { $set: { passwordHash } })).matchedCount > 0;
    },
    async deleteAccount(accountId) {
      const keyIds = (await c.keys.find({ accountId }).project<{ _id: string }>({ _id: 1 }).toArray()).map((k) => k._id);
      for (const keyId of keyIds) await c.idempotency.deleteMany({ _id: { $regex: `^${escapeRegex(keyId)}:` } });
      // Every collection, not a list of them, so a roll-up added later is covered too. Traces keep
      // the account in their meta field (a time-series collection can be filtered by it alone).
      const known = new Set(["accounts", "users", "api_keys"]);
      for (const info of await c.db.listCollections({}, { nameOnly: false }).toArray()) {
        if (info.name.startsWith("system.") || info.type === "view" || known.has(info.name)) continue;
        const fields = info.type === "timeseries" ? ["meta.accountId"] : ["meta.accountId", "accountId"];
        for (const field of fields) await c.db.collection(info.name).deleteMany({ [field]: accountId });
      }
      await c.users.deleteMany({ accountId });
      await c.keys.deleteMany({ accountId });
      return (await c.accounts.deleteOne({ _id: accountId })).deletedCount > 0;
    },
    async deleteSession(tokenHash) {
      await c.sessions.deleteOne({ _id: tokenHash });
    },
    async deleteExpiredSessions(now) {
      await c.sessions.deleteMany({ expiresAt: { $lt: now } });
    },
    async listAccounts() {
      const accounts = await c.accounts.find({}).sort({ createdAt: 1, _id: 1 }).toArray();
      const emails = new Map<string, string[]>();
      for (const user of await c.users.find({}).sort({ createdAt: 1, _id: 1 }).toArray()) {
        emails.set(user.accountId, [...(emails.get(user.accountId) ?? []), user.email]);
      }
      return accounts.map((a) => ({ ...toAccount(a), emails: emails.get(a._id) ?? [] }));
    },
    async setAccountPlan(accountId, plan) {
      const doc = await c.accounts.findOneAndUpdate({ _id: accountId }, { $set: { plan } }, { returnDocument: "after" });
      return doc ? toAccount(doc) : undefined;
    },
  };
}

function toSession(doc: SessionDoc): SessionRecord {
  return { tokenHash: doc._id, userId: doc.userId, accountId: doc.accountId, createdAt: doc.createdAt, expiresAt: doc.expiresAt, userAgent: doc.userAgent ?? "" };
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function toUser(doc: UserDoc): UserRecord {
  return { id: doc._id, email: doc.email, passwordHash: doc.passwordHash, accountId: doc.accountId, createdAt: doc.createdAt };
}
