import { randomBytes } from "node:crypto";
import { linkSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";

/**
 * Reads the 32-byte key kept in `file`, making it first if there is none. The new key is written
 * aside and linked into place, so two processes starting at once (the server and the CLI) both
 * read the one that won, never a half-written file.
 */
export function keyFile(file: string): Buffer {
  const aside = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
  writeFileSync(aside, randomBytes(32).toString("base64"), { mode: 0o600 });
  try {
    linkSync(aside, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  } finally {
    unlinkSync(aside);
  }
  const key = Buffer.from(readFileSync(file, "utf8").trim(), "base64");
  if (key.length !== 32) throw new Error(`${file} does not hold a base64 32-byte key`);
  return key;
}
