import type { HashingGate } from "./hashing-gate.js";
import type { LoginThrottle } from "./login-throttle.js";
import { decoyPasswordHash, verifyPassword } from "./password-hash.js";
import { tooManyAttempts } from "./too-many-attempts.js";

export interface PasswordAttempt {
  email: string;
  /** The client's address, as the limits count it. */
  address: string;
  password: string;
  /** The user's stored hash; undefined for an unknown email. */
  storedHash: string | undefined;
}

/**
 * Checks a password the way every caller must (LogIn, ChangePassword, DeleteAccount): the
 * attempt is reserved with the log-in limits before any hashing (RESOURCE_EXHAUSTED past
 * them), slowed down when the email is under attack, hashed in the log-in lane of the hashing
 * gate, and an unknown email costs the same scrypt run as a wrong password.
 */
export function createPasswordCheck(throttle: LoginThrottle, gate: HashingGate) {
  return async ({ email, address, password, storedHash }: PasswordAttempt): Promise<boolean> => {
    const decision = await throttle.reserve(email, address);
    if ("refusedFor" in decision) throw tooManyAttempts("too many log-in attempts", decision.refusedFor);
    if (decision.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, decision.delayMs));
    const hash = storedHash ?? (await decoyPasswordHash());
    const ok = await gate.run("login", () => verifyPassword(password, hash));
    if (ok && storedHash !== undefined) await throttle.succeeded(email, address);
    return ok && storedHash !== undefined;
  };
}

export type PasswordCheck = ReturnType<typeof createPasswordCheck>;
