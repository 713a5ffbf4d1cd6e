/** A person who signs in to the dashboard; what they may see comes from their memberships (team-store.ts). */
export interface UserRecord {
  id: string;
  /** Lower-cased and trimmed; unique across the store. */
  email: string;
  /** A self-describing scrypt hash (see src/dashboard/password-hash.ts); "" for a user who signs in only with SSO. */
  passwordHash: string;
  createdAt: Date;
}

/** A dashboard session; the cookie's token is stored only as its SHA-256. */
export interface SessionRecord {
  tokenHash: string;
  userId: string;
  createdAt: Date;
  expiresAt: Date;
  /** The browser's User-Agent at log-in, cut short; "" when unknown. */
  userAgent: string;
}

/** Thrown by createUser when the email is already taken. */
export class EmailTakenError extends Error {
  constructor() {
    super("a user with this email exists already");
  }
}

/** Dashboard users and their sessions. Implemented by every store adapter. */
export interface UserStore {
  /** EmailTakenError when the email is registered already. */
  createUser(input: { email: string; passwordHash: string }): Promise<UserRecord>;
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
  /** Deletes the user, their sessions and memberships (the caller keeps every organization an owner first). */
  deleteUser(userId: string): Promise<boolean>;
}
