import type { ApiKeyRecord, KeyScope } from "./records.js";

/** Thrown by createKey when the project already has `maxActive` active keys. */
export class KeyLimitError extends Error {
  constructor(readonly maxActive: number) {
    super(`the project has ${maxActive} active keys already`);
  }
}

export interface NewKey {
  /** The project the key belongs to. */
  accountId: string;
  name: string;
  /** "ingest" when absent. */
  scope?: KeyScope | undefined;
  hash: string;
  prefix: string;
  expiresAt?: Date | undefined;
  /** Refuse (KeyLimitError) when the project has this many active keys already, however many are created at once. */
  maxActive?: number | undefined;
}

/** Projects' API keys. Implemented by every store adapter. */
export interface KeyStore {
  /** Stores a key by its hash and visible prefix. */
  createKey(input: NewKey): Promise<ApiKeyRecord>;
  /** The key with this SHA-256, revoked or not; a store that can wait on a server gives up after `timeoutMs`. */
  findKeyByHash(hash: string, timeoutMs?: number): Promise<ApiKeyRecord | undefined>;
  /** The keys of one project (or of all), oldest first. */
  listKeys(projectId?: string): Promise<ApiKeyRecord[]>;
  /** Revokes the key whose id or visible prefix is given; undefined when none matches. */
  revokeKey(idOrPrefix: string): Promise<ApiKeyRecord | undefined>;
  /** Renames the key with this id; undefined when there is none. */
  renameKey(id: string, name: string): Promise<ApiKeyRecord | undefined>;
}
