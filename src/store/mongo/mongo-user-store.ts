import { MongoServerError } from "mongodb";
import { newId } from "../ids.js";
import { EmailTakenError, type SessionRecord, type UserRecord, type UserStore } from "../user-store.js";
import type { MongoCollections, SessionDoc, UserDoc } from "./mongo-collections.js";

/** Dashboard users and sessions in ordinary collections (email unique). */
export function mongoUserStore(c: MongoCollections): UserStore {
  return {
    async createUser({ email, passwordHash }) {
      const user: UserDoc = { _id: newId("usr"), email, passwordHash, createdAt: new Date() };
      try {
        await c.users.insertOne(user);
      } catch (error) {
        if (error instanceof MongoServerError && error.code === 11000) throw new EmailTakenError();
        throw error;
      }
      return toUser(user);
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
      await c.sessions.insertOne({ _id: s.tokenHash, userId: s.userId, createdAt: s.createdAt, expiresAt: s.expiresAt, userAgent: s.userAgent });
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
    async deleteUser(userId) {
      await c.sessions.deleteMany({ userId });
      await c.memberships.deleteMany({ userId });
      return (await c.users.deleteOne({ _id: userId })).deletedCount > 0;
    },
    async deleteSession(tokenHash) {
      await c.sessions.deleteOne({ _id: tokenHash });
    },
    async deleteExpiredSessions(now) {
      await c.sessions.deleteMany({ expiresAt: { $lt: now } });
    },
  };
}

function toSession(doc: SessionDoc): SessionRecord {
  return { tokenHash: doc._id, userId: doc.userId, createdAt: doc.createdAt, expiresAt: doc.expiresAt, userAgent: doc.userAgent ?? "" };
}

function toUser(doc: UserDoc): UserRecord {
  return { id: doc._id, email: doc.email, passwordHash: doc.passwordHash, createdAt: doc.createdAt };
}
