import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * Seals webhook secrets with AES-256-GCM under the alerts' secret key (ALERT_SECRET_KEY, or the
 * store's default): the service must read them back to sign, so they are encrypted, not hashed.
 */
export interface SecretBox {
  seal(plaintext: string): string;
  /** Throws when `sealed` was not sealed with this key or was altered. */
  open(sealed: string): string;
}

export function secretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error("the alerts' secret key must be 32 bytes");
  return {
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const data = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return [iv, cipher.getAuthTag(), data].map((part) => part.toString("base64url")).join(".");
    },
    open(sealed) {
      const [iv, tag, data] = sealed.split(".").map((part) => Buffer.from(part, "base64url"));
      if (!iv || !tag || !data) throw new Error("not a sealed secret");
      const decipher = createDecipheriv("aes-256-gcm", key, iv);
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(data), decipher.final()]).toString("utf8");
    },
  };
}

/** ALERT_SECRET_KEY: 32 bytes in base64 (e.g. `openssl rand -base64 32`). */
export function parseSecretKey(text: string): Buffer {
  const key = Buffer.from(text.trim(), "base64");
  if (key.length !== 32) throw new Error("ALERT_SECRET_KEY: expected 32 bytes in base64, e.g. the output of `openssl rand -base64 32`");
  return key;
}
