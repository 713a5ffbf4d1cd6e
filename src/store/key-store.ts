import type { AccountRecord, ApiKeyRecord } from "./records.js";

/** Accounts and their API keys. Implemented by every store adapter. */
export interface KeyStore {
  createAccount(input: { name: string; plan: string }): Promise<AccountRecord>;
  getAccount(id: string): Promise<AccountRecord | undefined>;
  /** Stores a key by its hash and visible prefix. */
  createKey(input: { accountId: string; name: string; hash: string; prefix: string }): Promise<ApiKeyRecord>;
  /** The key with this SHA-256, revoked or not. */
  findKeyByHash(hash: string): Promise<ApiKeyRecord | undefined>;
  listKeys(accountId?: string): Promise<ApiKeyRecord[]>;
  /** Revokes the key whose id or visible prefix is given; undefined when none matches. */
  revokeKey(idOrPrefix: string): Promise<ApiKeyRecord | undefined>;
}
