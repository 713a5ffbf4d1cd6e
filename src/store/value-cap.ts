/**
 * The bound on distinct values a roll-up tracks per project, dimension and UTC day (D54,
 * docs/operations.md): the first `limit` values of a day are tracked, every later one is counted
 * under `otherValue`, so a client sending a new user, session, tag or metadata value on every
 * trace grows the roll-ups by at most `limit` rows per dimension and day, and totals still add
 * up. Any roll-up keyed by a client's values (attribute groups, error groups, ...) uses this.
 *
 * The tracked values live in memory, seeded per scope from the store's own roll-up rows the first
 * time a scope is met, so the hot path costs a Set lookup. Each process holds its own sets: with
 * several processes writing one embedded store, a day may track up to `limit` values per process.
 * MongoDB's instances share theirs (mongo/mongo-value-bound.ts).
 */

/** The value the roll-ups count untracked values under. No client can tell it from a real one by
 * sending it: such a value is counted there too. Readers answer it as the "other" group. */
export const otherValue = "\u0000other";

/** The default of GROUP_VALUES_PER_DAY. */
export const defaultValuesPerDay = 10_000;

/** Where the sets are too many or too large, the least recently used scopes are dropped, and seeded again when met. */
const maxScopes = 4096;
const maxValues = 1_000_000;

/** The options of a store that keeps roll-ups keyed by a client's values. */
export interface ValueCapOptions {
  /** Values tracked per project, dimension and UTC day (GROUP_VALUES_PER_DAY); 0 tracks all. Default 10,000. */
  groupValuesPerDay?: number;
}

export interface ValueCap {
  /** Whether the scope's tracked values are known; if not, `seed` them before `admit`. */
  has(scope: string): boolean;
  /** The values the store already tracks in the scope (its roll-up rows). */
  seed(scope: string, values: Iterable<string>): void;
  /** The value to count a trace under: `value` if tracked or there is room for it, else `otherValue`. The empty value (none) is always tracked. */
  admit(scope: string, value: string): string;
}

/** The key of one scope: a project's values of one dimension on one UTC day. */
export function capScope(accountId: string, dimension: string, day: number): string {
  return `${accountId}\u0000${dimension}\u0000${day}`;
}

/** A cap of `limit` values per scope; 0 tracks every value (no cap). */
export function valueCap(limit: number): ValueCap {
  // Each scope's values and when it was last used: a stamp per admit costs less than keeping the
  // map in use order (a delete and a set per admit); the rare drop looks for the oldest.
  const scopes = new Map<string, { values: Set<string>; used: number }>();
  let clock = 0;
  /** Values held over all scopes. */
  let held = 0;
  const dropOldest = (keep: string) => {
    let oldest: string | undefined;
    let oldestUsed = Number.POSITIVE_INFINITY;
    for (const [scope, { used }] of scopes) {
      if (scope !== keep && used < oldestUsed) {
        oldest = scope;
        oldestUsed = used;
      }
    }
    held -= scopes.get(oldest!)!.values.size;
    scopes.delete(oldest!);
  };
  return {
    has: (scope) => limit === 0 || scopes.has(scope),
    seed(scope, values) {
      if (limit === 0) return;
      const tracked = new Set<string>();
      for (const value of values) if (value !== "" && value !== otherValue) tracked.add(value);
      held += tracked.size - (scopes.get(scope)?.values.size ?? 0);
      scopes.set(scope, { values: tracked, used: ++clock });
      while (scopes.size > 1 && (scopes.size > maxScopes || held > maxValues)) dropOldest(scope);
    },
    admit(scope, value) {
      if (limit === 0 || value === "" || value === otherValue) return value;
      const tracked = scopes.get(scope);
      if (!tracked) throw new Error(`value cap: scope not seeded: ${JSON.stringify(scope)}`);
      tracked.used = ++clock;
      if (tracked.values.has(value)) return value;
      if (tracked.values.size >= limit) return otherValue;
      tracked.values.add(value);
      held += 1;
      return value;
    },
  };
}
