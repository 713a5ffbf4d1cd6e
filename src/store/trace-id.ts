import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * Trace ids as people and tools see them. A store's own position of a trace (the embedded store's
 * row number, MongoDB's ObjectId with its per-process counter) would tell anyone who sees two ids
 * how many traces the whole service took in between. Shown ids are that position encrypted as one
 * AES-128 block under the store's own key: they look random, reveal neither order nor volume, and
 * the store decrypts them back for cursors and look-ups (D36).
 */
export interface TraceIdCodec {
  encode(position: Buffer): string;
  /** The position inside an id, or undefined for an id this store did not hand out. */
  decode(id: string): Buffer | undefined;
}

const block = 16;
const shape = /^[A-Za-z0-9_-]{22}$/;

/** A new random key for a store's trace ids. */
export function newTraceIdKey(): Buffer {
  return randomBytes(block);
}

/** Ids for positions of `length` bytes (at most 16; the rest of the block must decrypt to zeros). */
export function traceIdCodec(key: Buffer, length: number): TraceIdCodec {
  return {
    encode(position) {
      const plain = Buffer.alloc(block);
      position.copy(plain, 0, 0, length);
      const cipher = createCipheriv("aes-128-ecb", key, null).setAutoPadding(false);
      return Buffer.concat([cipher.update(plain), cipher.final()]).toString("base64url");
    },
    decode(id) {
      if (!shape.test(id)) return undefined;
      const sealed = Buffer.from(id, "base64url");
      // The last character has 4 unused bits: only the one spelling of each id is accepted.
      if (sealed.toString("base64url") !== id) return undefined;
      const decipher = createDecipheriv("aes-128-ecb", key, null).setAutoPadding(false);
      const plain = Buffer.concat([decipher.update(sealed), decipher.final()]);
      return plain.subarray(length).every((b) => b === 0) ? plain.subarray(0, length) : undefined;
    },
  };
}

/** The embedded store's ids: its row numbers. */
export function sequenceIds(key: Buffer) {
  const codec = traceIdCodec(key, 8);
  return {
    idOf(seq: number): string {
      const position = Buffer.alloc(8);
      position.writeBigUInt64BE(BigInt(seq));
      return codec.encode(position);
    },
    /** The row number inside an id, or undefined. */
    seqOf(id: string): number | undefined {
      const position = codec.decode(id);
      return position && Number(position.readBigUInt64BE());
    },
  };
}
