import { hash, randomBytes } from "node:crypto";

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const keyPrefix = "ct_";
/** 40 base62 characters carry about 238 bits of entropy (D18 asks for at least 32 characters). */
const secretLength = 40;
/** How many characters after `ct_` are kept in clear so people can tell keys apart. */
const visiblePrefixLength = 8;

/** A newly minted key: the plaintext exists only here and is shown once. */
export interface MintedKey {
  plaintext: string;
  hash: string;
  prefix: string;
}

export function mintApiKey(): MintedKey {
  let secret = "";
  while (secret.length < secretLength) {
    for (const byte of randomBytes(secretLength)) {
      // Rejection sampling keeps every character equally likely (248 = 4 * 62).
      if (byte < 248 && secret.length < secretLength) secret += base62[byte % 62];
    }
  }
  const plaintext = keyPrefix + secret;
  return { plaintext, hash: hashApiKey(plaintext), prefix: visiblePrefix(plaintext) };
}

/** Keys are stored only as their SHA-256: they are long random secrets, so a slow hash adds nothing. */
export function hashApiKey(plaintext: string): string {
  return hash("sha256", plaintext, "hex");
}

export function visiblePrefix(plaintext: string): string {
  return plaintext.slice(keyPrefix.length, keyPrefix.length + visiblePrefixLength);
}

/** Could this string be one of our keys? Anything else is rejected without a store lookup. */
export function looksLikeApiKey(candidate: string): boolean {
  return candidate.length >= keyPrefix.length + 32 && candidate.length <= 128 && candidate.startsWith(keyPrefix) && /^ct_[0-9A-Za-z]+$/.test(candidate);
}

/** The key of an `Authorization: Bearer <key>` header value, or undefined for any other shape. */
export function bearerToken(authorization: string | null | undefined): string | undefined {
  if (!authorization) return undefined;
  const match = /^Bearer +(\S+) *$/i.exec(authorization);
  return match?.[1];
}
