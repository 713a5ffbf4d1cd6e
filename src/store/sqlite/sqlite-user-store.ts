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
  user_agent: string;
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
    insertSession: db.prepare(`INSERT INTO sessions (token_hash, user_id, account_id, created_at, expires_at, user_agent) VALUES (?, ?, ?, ?, ?, ?)`),
    sessionsOfUser: db.prepare(`SELECT * FROM sessions WHERE user_id = ? ORDER BY created_at DESC`),
    deleteUserSessions: db.prepare(`DELETE FROM sessions WHERE user_id = @user AND token_hash IS NOT @keep`),
    setPassword: db.prepare(`UPDATE users SET password_hash = ? WHERE id = ?`),
    deleteAccountRow: db.prepare(`DELETE FROM accounts WHERE id = ?`),
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

  /**
   * Every table that names an account or a key, found in the schema rather than listed, so a
   * roll-up added later is deleted too. Rows naming the account's keys go first, then rows
   * naming the account (sessions before users and keys, which they reference), then the account.
   */
  const tablesWith = (column: string) =>
    db
      .prepare(
        `SELECT m.name FROM sqlite_master m JOIN pragma_table_info(m.name) c
         WHERE m.type = 'table' AND c.name = ? AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name`,
      )
      .pluck()
      .all(column) as string[];
  const referenced = ["users", "api_keys"];
  const deleteAccount = db.transaction((accountId: string): boolean => {
    const accountTables = tablesWith("account_id");
    for (const table of tablesWith("key_id").filter((t) => !accountTables.includes(t))) {
      db.prepare(`DELETE FROM "${table}" WHERE key_id IN (SELECT id FROM api_keys WHERE account_id = ?)`).run(accountId);
    }
    for (const table of [...accountTables.filter((t) => !referenced.includes(t)), ...referenced]) {
      db.prepare(`DELETE FROM "${table}" WHERE account_id = ?`).run(accountId);
    }
    return statements.deleteAccountRow.run(accountId).changes > 0;
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
      statements.insertSession.run(s.tokenHash, s.userId, s.accountId, s.createdAt.getTime(), s.expiresAt.getTime(), s.userAgent);
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
    async deleteAccount(accountId) {
      return deleteAccount.immediate(accountId);
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
    userAgent: row.user_agent,
  };
}

function toAccount(row: AccountRow): AccountRecord {
  return { id: row.id, name: row.name, plan: row.plan, createdAt: new Date(row.created_at) };
}
