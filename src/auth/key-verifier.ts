import type { KeyStore } from "../store/key-store.js";
import { isActiveKey, type ApiKeyRecord } from "../store/records.js";
import { withTimeLimit } from "../store/time-limit.js";
import { hashApiKey, looksLikeApiKey } from "./api-key.js";

export interface KeyVerifierOptions {
  /** How long a lookup is trusted; revocation must reach every instance within 5 s (D20). */
  ttlMs?: number;
  /** Bound on cached lookups, so a flood of random keys cannot grow memory without limit. */
  maxEntries?: number;
}

export interface KeyVerifier {
  /**
   * The active key for this plaintext, or undefined when it is malformed, unknown, revoked or
   * expired; a lookup in the store gives up after `timeoutMs`. An answer already known (cached,
   * or a malformed key) comes as it is, not as a promise: every request asks, and most are
   * answered from the cache, so the caller need not wait a turn of the event loop for them.
   */
  verify(plaintext: string, timeoutMs?: number): ApiKeyRecord | undefined | Promise<ApiKeyRecord | undefined>;
  /** Drops cached answers for these key hashes, so a key revoked here stops working at once in this process. */
  forget(hashes: string[]): void;
}

/** Verifies keys against the store, caching each answer briefly so the hot path rarely touches the store. */
export function createKeyVerifier(keys: KeyStore, options: KeyVerifierOptions = {}): KeyVerifier {
  const ttlMs = options.ttlMs ?? 2000;
  const maxEntries = options.maxEntries ?? 10_000;
  const cache = new Map<string, { key: ApiKeyRecord | undefined; expiresAt: number }>();

  return {
    verify(plaintext, timeoutMs) {
      if (!looksLikeApiKey(plaintext)) return undefined;
      const hash = hashApiKey(plaintext);
      const now = Date.now();
      const cached = cache.get(hash);
      if (cached && cached.expiresAt > now) return cached.key && isActiveKey(cached.key) ? cached.key : undefined;
      return lookUp(hash, now, timeoutMs);
    },
    forget(hashes) {
      for (const hash of hashes) cache.delete(hash);
    },
  };

  async function lookUp(hash: string, now: number, timeoutMs: number | undefined): Promise<ApiKeyRecord | undefined> {
    const lookup = keys.findKeyByHash(hash, timeoutMs);
    const found = await (timeoutMs === undefined
      ? lookup
      : withTimeLimit(lookup, timeoutMs, () => new Error(`the key lookup took over ${timeoutMs} ms`)));
    const key = found && isActiveKey(found) ? found : undefined;
    cache.delete(hash);
    if (cache.size >= maxEntries) cache.delete(cache.keys().next().value!);
    cache.set(hash, { key, expiresAt: now + ttlMs });
    return key;
  }
}
