/** An account owns keys; its plan sets their limits (D19). */
export interface AccountRecord {
  id: string;
  name: string;
  plan: string;
  createdAt: Date;
}

/** An API key as stored: never the plaintext (D18). */
export interface ApiKeyRecord {
  id: string;
  accountId: string;
  /** The owning account's plan, resolved when the key is read. */
  plan: string;
  name: string;
  /** The first characters after `ct_`, kept to tell keys apart. */
  prefix: string;
  hash: string;
  createdAt: Date;
  revokedAt: Date | undefined;
  lastUsedAt: Date | undefined;
  /** When the key stops working by itself; undefined for never. */
  expiresAt: Date | undefined;
}

/** Whether a key still works at `now`: neither revoked nor expired. */
export function isActiveKey(key: ApiKeyRecord, now: Date = new Date()): boolean {
  return key.revokedAt === undefined && (key.expiresAt === undefined || key.expiresAt.getTime() > now.getTime());
}
