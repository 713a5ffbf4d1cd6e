import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from "node:crypto";

/**
 * scrypt at OWASP's recommended minimum cost (N=2^17, r=8, p=1: 128 MiB and roughly a tenth
 * of a second per guess), so a stolen hash is expensive to attack. The parameters are stored
 * in the hash, so raising them later keeps old hashes verifiable.
 */
const defaults = { N: 2 ** 17, r: 8, p: 1 };
const keyLength = 32;

function derive(password: string, salt: Buffer, params: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r + 1024 * 1024 };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize("NFKC"), salt, keyLength, options, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

/** `scrypt$N$r$p$salt$hash` with base64url salt and hash. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, defaults);
  return ["scrypt", defaults.N, defaults.r, defaults.p, salt.toString("base64url"), key.toString("base64url")].join("$");
}

/** Whether the password matches; false for any hash it cannot read. Constant-time in the comparison. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !salt || !hash) return false;
  const expected = Buffer.from(hash, "base64url");
  const key = await derive(password, Buffer.from(salt, "base64url"), { N: Number(n), r: Number(r), p: Number(p) });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/**
 * A hash of no one's password, verified when the email is unknown so that a failed log-in takes
 * as long whether or not the account exists (no user enumeration by timing).
 */
export function decoyPasswordHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(16).toString("hex"));
  return decoy;
}
let decoy: Promise<string> | undefined;
