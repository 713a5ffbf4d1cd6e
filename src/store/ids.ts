import { randomBytes } from "node:crypto";

/** A random, URL-safe identifier such as `key_3kT9xQ2mZp8w` (72 bits: collisions are not a concern). */
export function newId(kind: "acc" | "key" | "usr" | "org" | "prj" | "inv" | "aud" | "alr" | "dst" | "evt" | "prc" | "rpj"): string {
  return `${kind}_${randomBytes(9).toString("base64url")}`;
}
