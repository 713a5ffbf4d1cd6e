import { attemptWindow } from "./attempt-window.js";

export interface SignupLimitOptions {
  perAddress: number;
  total: number;
  windowSeconds: number;
}

/** Sign-ups per address and from everywhere, taken before the password is hashed. */
export function createSignupLimit(options: SignupLimitOptions): { reserve(address: string): Promise<number> } {
  const perAddress = attemptWindow(options.perAddress, options.windowSeconds);
  const total = attemptWindow(options.total, options.windowSeconds);
  return {
    /** 0 when the sign-up may go ahead; else seconds to wait. Every attempt counts, a taken email too. */
    async reserve(address) {
      const addressWait = await perAddress.take(address);
      if (addressWait > 0) return addressWait;
      const totalWait = await total.take("all");
      if (totalWait > 0) await perAddress.giveBack(address);
      return totalWait;
    },
  };
}
