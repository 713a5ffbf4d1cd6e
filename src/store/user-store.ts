import type { AccountRecord } from "./records.js";

/** A person who signs in to the dashboard; each user belongs to one account. */
export interface UserRecord {
  id: string;
  /** Lower-cased and trimmed; unique across the store. */
  email: string;
  /** A self-describing scrypt hash (see src/dashboard/password-hash.ts); never the password. */
  passwordHash: string;
  accountId: string;
  createdAt: Date;
}

/** A dashboard session; the cookie's token is stored only as its SHA-256. */
export interface SessionRecord {
  tokenHash: string;
  userId: string;
  accountId: string;
  createdAt: Date;
  expiresAt: Date;
  /** The browser's User-Agent at log-in, cut short; "" when unknown. */
  userAgent: string;
}

/** An account with the emails of its users, for `calltrace accounts list`. */
export interface AccountSummary extends AccountRecord {
  emails: string[];
}

/** Thrown by createUserWithAccount when the email is already taken. */
export class EmailTakenError extends Error {
  constructor() {
    super("a user with this email exists already");
  }
}

/** Dashboard users, their sessions, and account administration. Implemented by every store adapter. */
export interface UserStore {
  /** Sign-up: a new account on `plan` and its first user, both or neither. */
  createUserWithAccount(input: {
    email: string;
    passwordHash: string;
    accountName: string;
    plan: string;
  }): Promise<{ user: UserRecord; account: AccountRecord }>;
  findUserByEmail(email: string): Promise<UserRecord | undefined>;
  getUser(id: string): Promise<UserRecord | undefined>;
  createSession(session: SessionRecord): Promise<void>;
  /** The session with this token hash, expired or not (the caller checks expiresAt). */
  findSession(tokenHash: string): Promise<SessionRecord | undefined>;
  deleteSession(tokenHash: string): Promise<void>;
  /** Forgets sessions that expired before `now`. */
  deleteExpiredSessions(now: Date): Promise<void>;
  /** The user's sessions, expired or not, newest first. */
  listSessions(userId: string): Promise<SessionRecord[]>;
  /** Ends every session of the user but the one with `keepTokenHash`; answers how many ended. */
  deleteUserSessions(userId: string, keepTokenHash?: string): Promise<number>;
  /** Replaces the user's password hash; false when there is no such user. */
  setPasswordHash(userId: string, passwordHash: string): Promise<boolean>;
  /**
   * Deletes the account and everything of it: users, sessions, keys, traces and every roll-up
   * or other record that names the account or its keys. False when there was no such account
   * (the rest is deleted all the same, so it can be run again to sweep stragglers).
   */
  deleteAccount(accountId: string): Promise<boolean>;
  /** Every account, oldest first, with its users' emails. */
  listAccounts(): Promise<AccountSummary[]>;
  /** Moves an account to another plan; undefined when there is no such account. */
  setAccountPlan(accountId: string, plan: string): Promise<AccountRecord | undefined>;
}
