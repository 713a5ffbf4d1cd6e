import { readFileSync } from "node:fs";
import { ConfigError } from "./config.js";

/** A plan's limits, counted per API key (D19). */
export interface Plan {
  name: string;
  perMinute: number;
  perMonth: number;
  /** Most active (neither revoked nor expired) keys an account may hold: limits are per key, so this bounds an account's total (D36). */
  maxKeys: number;
}

export type Plans = ReadonlyMap<string, Plan>;

/** An account's active keys when its plan does not say (`max_keys`). */
export const defaultMaxKeys = { free: 10, other: 100 } as const;

const builtIn = {
  free: { per_minute: 100, per_month: 50_000, max_keys: defaultMaxKeys.free },
  pro: { per_minute: 1_000, per_month: 500_000, max_keys: defaultMaxKeys.other },
};

/** The plans of PLANS_FILE, or the built-in free and pro plans when no file is given. */
export function loadPlans(plansFile: string | undefined): Plans {
  if (plansFile === undefined) return parsePlans(builtIn, "built-in plans");
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(plansFile, "utf8"));
  } catch (err) {
    throw new ConfigError(`PLANS_FILE ${plansFile}: ${(err as Error).message}`);
  }
  return parsePlans(raw, `PLANS_FILE ${plansFile}`);
}

function parsePlans(raw: unknown, origin: string): Plans {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw) || Object.keys(raw).length === 0) {
    throw new ConfigError(`${origin}: expected an object of plans such as {"free":{"per_minute":100,"per_month":50000,"max_keys":10}}`);
  }
  const plans = new Map<string, Plan>();
  for (const [name, limits] of Object.entries(raw)) {
    const perMinute = (limits as Record<string, unknown>)?.per_minute;
    const perMonth = (limits as Record<string, unknown>)?.per_month;
    const maxKeys = (limits as Record<string, unknown>)?.max_keys ?? (name === "free" ? defaultMaxKeys.free : defaultMaxKeys.other);
    if (!/^[a-z0-9_-]{1,32}$/.test(name)) throw new ConfigError(`${origin}: plan name ${JSON.stringify(name)} must be 1-32 of a-z 0-9 _ -`);
    if (!isPositiveInteger(perMinute) || !isPositiveInteger(perMonth)) {
      throw new ConfigError(`${origin}: plan ${name} needs per_minute and per_month as whole numbers > 0`);
    }
    if (!isPositiveInteger(maxKeys)) throw new ConfigError(`${origin}: plan ${name}: max_keys must be a whole number > 0`);
    plans.set(name, { name, perMinute, perMonth, maxKeys });
  }
  return plans;
}

function isPositiveInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0;
}
