import { attemptWindow } from "./attempt-window.js";

export interface LoginThrottleOptions {
  /** Attempts for one email from one address per window; past it they are refused. */
  perEmailAndAddress: number;
  /** Attempts from one address, whatever the email, per window; past it they are refused. */
  perAddress: number;
  /** Attempts for one email from everywhere per window; past it each attempt is slowed, never refused. */
  slowPerEmail: number;
  /** The slow-down of each attempt past `slowPerEmail`, in milliseconds. */
  slowDownMs: number;
  windowSeconds: number;
}

/** What to do with a log-in attempt: refuse it for some seconds, or check the password after a delay (often 0). */
export type LoginDecision = { refusedFor: number } | { delayMs: number };

export interface LoginThrottle {
  /** Reserves the attempt before its password is checked, so no more than the limits are ever checked. */
  reserve(email: string, address: string): Promise<LoginDecision>;
  /** A success gives its attempts back and clears the email's count from that address. */
  succeeded(email: string, address: string): Promise<void>;
}

/**
 * Limits password guessing so that a lock-out hurts the guesser, not the account's owner. Hard
 * limits apply per email and address and per address: a guesser locks out only their own
 * address. The per-email limit, which counts guesses from everywhere (a botnet), is soft: past
 * it attempts are slowed down, so the owner can still log in from their own address (D35).
 */
export function createLoginThrottle(options: LoginThrottleOptions): LoginThrottle {
  const pair = attemptWindow(options.perEmailAndAddress, options.windowSeconds);
  const address = attemptWindow(options.perAddress, options.windowSeconds);
  const email = attemptWindow(options.slowPerEmail, options.windowSeconds);
  const pairKey = (e: string, a: string) => `${e}\n${a}`;
  return {
    async reserve(e, a) {
      const pairWait = await pair.take(pairKey(e, a));
      if (pairWait > 0) return { refusedFor: pairWait };
      const addressWait = await address.take(a);
      if (addressWait > 0) {
        await pair.giveBack(pairKey(e, a));
        return { refusedFor: addressWait };
      }
      return { delayMs: (await email.take(e)) > 0 ? options.slowDownMs : 0 };
    },
    async succeeded(e, a) {
      await pair.clear(pairKey(e, a));
      await address.giveBack(a);
      await email.giveBack(e);
    },
  };
}
