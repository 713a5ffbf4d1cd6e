import type { AccountRecord, ApiKeyRecord } from "./records.js";

/** Thrown by createKey when the account already has `maxActive` active keys. */
export class KeyLimitError extends Error {
  constructor(readonly maxActive: number) {
    super(`the account has ${maxActive} active keys already`);
  }
}

export interface NewKey {
  accountId: string;
  name: string;
  hash: string;
  prefix: string;
  expiresAt?: Date | undefined;
  /** Refuse (KeyLimitError) when the account has this many active keys already, however many are created at once. */
  maxActive?: number | undefined;
}

/** Accounts and their API keys. Implemented by every store adapter. */
export interface KeyStore {
  createAccount(input: { name: string; plan: string }): Promise<AccountRecord>;
  getAccount(id: string): Promise<AccountRecord | undefined>;
  /** Stores a key by its hash and visible prefix. */
  createKey(input: NewKey): Promise<ApiKeyRecord>;
  /** The key with this SHA-256, revoked or not; a store that can wait on a server gives up after `timeoutMs`. */
  findKeyByHash(hash: string, timeoutMs?: number): Promise<ApiKeyRecord | undefined>;
  listKeys(accountId?: string): Promise<ApiKeyRecord[]>;
  /** Revokes the key whose id or visible prefix is given; undefined when none matches. */
  revokeKey(idOrPrefix: string): Promise<ApiKeyRecord | undefined>;
  /** Renames the key with this id; undefined when there is none. */
  renameKey(id: string, name: string): Promise<ApiKeyRecord | undefined>;
}
