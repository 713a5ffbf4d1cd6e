/** What a key may do: send traces (every key made before scopes existed), or read them. */
export type KeyScope = "ingest" | "read";

export function isKeyScope(value: string): value is KeyScope {
  return value === "ingest" || value === "read";
}

/** An API key as stored: never the plaintext (D18). */
export interface ApiKeyRecord {
  id: string;
  /** The key's project (called the account where traces are concerned; docs/teams.md). */
  accountId: string;
  /** The project's plan, resolved when the key is read. */
  plan: string;
  /** The project's own retention in days, resolved like the plan; undefined: RETENTION_DAYS alone. */
  retentionDays?: number | undefined;
  scope: KeyScope;
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
