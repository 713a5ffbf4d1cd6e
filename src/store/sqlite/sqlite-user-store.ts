import type Database from "better-sqlite3";
import { newId } from "../ids.js";
import { EmailTakenError, type SessionRecord, type UserRecord, type UserStore } from "../user-store.js";

interface UserRow {
  id: string;
  email: string;
  password_hash: string;
  created_at: number;
}

interface SessionRow {
  token_hash: string;
  user_id: string;
  created_at: number;
  expires_at: number;
  user_agent: string;
}

/** Users and sessions in the embedded store's database. */
export function createSqliteUserStore(db: Database.Database): UserStore {
  const statements = {
    insertUser: db.prepare(`INSERT INTO users (id, email, password_hash, created_at) VALUES (?, ?, ?, ?)`),
    userByEmail: db.prepare(`SELECT * FROM users WHERE email = ?`),
    userById: db.prepare(`SELECT * FROM users WHERE id = ?`),
    insertSession: db.prepare(`INSERT INTO sessions (token_hash, user_id, created_at, expires_at, user_agent) VALUES (?, ?, ?, ?, ?)`),
    sessionsOfUser: db.prepare(`SELECT * FROM sessions WHERE user_id = ? ORDER BY created_at DESC`),
    deleteUserSessions: db.prepare(`DELETE FROM sessions WHERE user_id = @user AND token_hash IS NOT @keep`),
    setPassword: db.prepare(`UPDATE users SET password_hash = ? WHERE id = ?`),
    sessionByHash: db.prepare(`SELECT * FROM sessions WHERE token_hash = ?`),
    deleteSession: db.prepare(`DELETE FROM sessions WHERE token_hash = ?`),
    deleteExpired: db.prepare(`DELETE FROM sessions WHERE expires_at < ?`),
    deleteMemberships: db.prepare(`DELETE FROM memberships WHERE user_id = ?`),
    deleteUserRow: db.prepare(`DELETE FROM users WHERE id = ?`),
  };

  const deleteUser = db.transaction((userId: string): boolean => {
    statements.deleteUserSessions.run({ user: userId, keep: null });
    statements.deleteMemberships.run(userId);
    return statements.deleteUserRow.run(userId).changes > 0;
  });

  return {
    async createUser({ email, passwordHash }) {
      const user: UserRecord = { id: newId("usr"), email, passwordHash, createdAt: new Date() };
      try {
        statements.insertUser.run(user.id, user.email, user.passwordHash, user.createdAt.getTime());
      } catch (error) {
        if ((error as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") throw new EmailTakenError();
        throw error;
      }
      return user;
    },
    async findUserByEmail(email) {
      const row = statements.userByEmail.get(email) as UserRow | undefined;
      return row && toUser(row);
    },
    async getUser(id) {
      const row = statements.userById.get(id) as UserRow | undefined;
      return row && toUser(row);
    },
    async createSession(s) {
      statements.insertSession.run(s.tokenHash, s.userId, s.createdAt.getTime(), s.expiresAt.getTime(), s.userAgent);
    },
    async findSession(tokenHash) {
      const row = statements.sessionByHash.get(tokenHash) as SessionRow | undefined;
      return row && toSession(row);
    },
    async deleteSession(tokenHash) {
      statements.deleteSession.run(tokenHash);
    },
    async deleteExpiredSessions(now) {
      statements.deleteExpired.run(now.getTime());
    },
    async listSessions(userId) {
      return (statements.sessionsOfUser.all(userId) as SessionRow[]).map(toSession);
    },
    async deleteUserSessions(userId, keepTokenHash) {
      return statements.deleteUserSessions.run({ user: userId, keep: keepTokenHash ?? null }).changes;
    },
    async setPasswordHash(userId, passwordHash) {
      return statements.setPassword.run(passwordHash, userId).changes > 0;
    },
    async deleteUser(userId) {
      return deleteUser.immediate(userId);
    },
  };
}

function toUser(row: UserRow): UserRecord {
  return { id: row.id, email: row.email, passwordHash: row.password_hash, createdAt: new Date(row.created_at) };
}

function toSession(row: SessionRow): SessionRecord {
  return {
    tokenHash: row.token_hash,
    userId: row.user_id,
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
    userAgent: row.user_agent,
  };
}
