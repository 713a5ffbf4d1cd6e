/** Why a password is hashed: log-ins go first, sign-ups take what is left. */
export type HashingPurpose = "login" | "signup";

/** Thrown when so many sign-ups wait for a hash that another would wait too long. */
export class HashingBusyError extends Error {
  constructor() {
    super("the server is busy creating accounts; try again in a minute");
  }
}

export interface HashingGate {
  /** Runs `work` (one scrypt) once a slot is free. */
  run<T>(purpose: HashingPurpose, work: () => Promise<T>): Promise<T>;
}

/**
 * Caps the password hashes computed at once (scrypt takes 128 MiB and a core for about a
 * tenth of a second), so a flood of sign-ups cannot starve the CPU. Sign-ups use at most all
 * slots but one, and waiting log-ins go before waiting sign-ups, so a log-in waits for at most
 * one hash however many sign-ups arrive; past `maxWaitingSignups` sign-ups are refused.
 */
export function createHashingGate({
  concurrency,
  maxWaitingSignups = 8,
}: {
  concurrency: number;
  maxWaitingSignups?: number;
}): HashingGate {
  const slots = Math.max(1, concurrency);
  const signupSlots = Math.max(1, slots - 1);
  let running = 0;
  let runningSignups = 0;
  const waiting: Record<HashingPurpose, (() => void)[]> = { login: [], signup: [] };

  const next = () => {
    while (running < slots) {
      const start = waiting.login.shift() ?? (runningSignups < signupSlots ? waiting.signup.shift() : undefined);
      if (!start) return;
      start();
    }
  };

  return {
    async run(purpose, work) {
      if (purpose === "signup" && waiting.signup.length >= maxWaitingSignups) throw new HashingBusyError();
      await new Promise<void>((resolve) => {
        waiting[purpose].push(() => {
          running++;
          if (purpose === "signup") runningSignups++;
          resolve();
        });
        next();
      });
      try {
        return await work();
      } finally {
        running--;
        if (purpose === "signup") runningSignups--;
        next();
      }
    },
  };
}
