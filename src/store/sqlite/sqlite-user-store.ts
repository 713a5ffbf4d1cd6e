import type Database from "better-sqlite3";
import { newId } from "../ids.js";
import type { AccountRecord } from "../records.js";
import { EmailTakenError, type SessionRecord, type UserRecord, type UserStore } from "../user-store.js";

interface UserRow {
  id: string;
  email: string;
  password_hash: string;
  account_id: string;
  created_at: number;
}

interface SessionRow {
  token_hash: string;
  user_id: string;
  account_id: string;
  created_at: number;
  expires_at: number;
}

interface AccountRow {
  id: string;
  name: string;
  plan: string;
  created_at: number;
  emails: string | null;
}

/** Users, sessions and account administration in the embedded store's database. */
export function createSqliteUserStore(db: Database.Database): UserStore {
  const statements = {
    insertAccount: db.prepare(`INSERT INTO accounts (id, name, plan, created_at) VALUES (?, ?, ?, ?)`),
    insertUser: db.prepare(`INSERT INTO users (id, email, password_hash, account_id, created_at) VALUES (?, ?, ?, ?, ?)`),
    userByEmail: db.prepare(`SELECT * FROM users WHERE email = ?`),
    userById: db.prepare(`SELECT * FROM users WHERE id = ?`),
    insertSession: db.prepare(`INSERT INTO sessions (token_hash, user_id, account_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`),
    sessionByHash: db.prepare(`SELECT * FROM sessions WHERE token_hash = ?`),
    deleteSession: db.prepare(`DELETE FROM sessions WHERE token_hash = ?`),
    deleteExpired: db.prepare(`DELETE FROM sessions WHERE expires_at < ?`),
    // json_group_array keeps emails intact whatever characters they hold.
    listAccounts: db.prepare(
      `SELECT a.*, (SELECT json_group_array(u.email) FROM (SELECT email FROM users WHERE account_id = a.id ORDER BY created_at) u) AS emails
       FROM accounts a ORDER BY a.created_at, a.id`,
    ),
    setPlan: db.prepare(`UPDATE accounts SET plan = ? WHERE id = ?`),
    accountById: db.prepare(`SELECT *, NULL AS emails FROM accounts WHERE id = ?`),
  };

  /** The account and its first user in one transaction, so a taken email leaves no orphan account. */
  const signUp = db.transaction((account: AccountRecord, user: UserRecord) => {
    statements.insertAccount.run(account.id, account.name, account.plan, account.createdAt.getTime());
    statements.insertUser.run(user.id, user.email, user.passwordHash, user.accountId, user.createdAt.getTime());
  });

  return {
    async createUserWithAccount({ email, passwordHash, accountName, plan }) {
      const createdAt = new Date();
      const account: AccountRecord = { id: newId("acc"), name: accountName, plan, createdAt };
      const user: UserRecord = { id: newId("usr"), email, passwordHash, accountId: account.id, createdAt };
      try {
        signUp(account, user);
      } catch (error) {
        if ((error as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") throw new EmailTakenError();
        throw error;
      }
      return { user, account };
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
      statements.insertSession.run(s.tokenHash, s.userId, s.accountId, s.createdAt.getTime(), s.expiresAt.getTime());
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
    async listAccounts() {
      return (statements.listAccounts.all() as AccountRow[]).map((row) => ({
        ...toAccount(row),
        emails: JSON.parse(row.emails ?? "[]") as string[],
      }));
    },
    async setAccountPlan(accountId, plan) {
      if (statements.setPlan.run(plan, accountId).changes === 0) return undefined;
      return toAccount(statements.accountById.get(accountId) as AccountRow);
    },
  };
}

function toUser(row: UserRow): UserRecord {
  return { id: row.id, email: row.email, passwordHash: row.password_hash, accountId: row.account_id, createdAt: new Date(row.created_at) };
}

function toSession(row: SessionRow): SessionRecord {
  return {
    tokenHash: row.token_hash,
    userId: row.user_id,
    accountId: row.account_id,
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
  };
}

function toAccount(row: AccountRow): AccountRecord {
  return { id: row.id, name: row.name, plan: row.plan, createdAt: new Date(row.created_at) };
}
