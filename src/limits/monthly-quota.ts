import type { Plan } from "../config/plans.js";
import { withTimeLimit } from "../store/time-limit.js";
import type { LimiterBackend } from "./limiter-backend.js";
import type { HeaderFields } from "./rate-limit-headers.js";
import type { SeededCounters } from "./seeded-counters.js";

/** The outcome of counting traces against their key's calendar month (D11). */
export interface QuotaDecision {
  /** At least one trace fits (for a single trace: it does). */
  allowed: boolean;
  /** How many of the traces asked for fit, from the first: all, some (an OTLP Export near the limit) or none. */
  granted: number;
  /** The plan's traces per month. */
  limit: number;
  /** Traces left this month after the granted ones. */
  remaining: number;
  /** Unix time, in whole seconds, of 00:00 UTC on the 1st of next month. */
  resetAt: number;
  /** Whole seconds until then. */
  retryAfter: number;
}

export interface QuotaReservation {
  decision: QuotaDecision;
  /**
   * Gives back `count` of the granted traces (default: all still held): they were not stored after
   * all (a duplicate, or the write failed). Never gives back more than was granted.
   */
  release(count?: number): Promise<void>;
}

export interface MonthlyQuota {
  /**
   * Reserves `count` traces (default 1); the ones that do not fit are given back at once. A
   * rebuild of the month's counter this starts gives up after `timeoutMs` (at most countTimeoutMs).
   */
  reserve(key: { id: string; accountId: string }, plan: Plan, count?: number, timeoutMs?: number): Promise<QuotaReservation>;
}

export interface MonthlyQuotaOptions {
  backend: LimiterBackend;
  /** Traces this key already has stored since `since`: seeds a month's counter, so counts survive restarts. */
  countStored(key: { id: string; accountId: string }, since: Date): Promise<number>;
  /** Longest the count of stored traces may take; past it the reservation fails with QuotaUnavailableError. */
  countTimeoutMs: number;
  /** The clock (injectable so tests can cross a month boundary). */
  now?: () => number;
}

/** A month's counter could not be rebuilt from the stored traces in time (or at all): the request cannot be counted now. */
export class QuotaUnavailableError extends Error {}

/**
 * How long a counter lives. Shorter than a month on purpose: a counter that is gone is rebuilt
 * from the stored traces anyway, and last month's counters need not outlive it by much.
 */
const counterTtlSeconds = 20 * 24 * 3600;

/**
 * Per-key calendar-month (UTC) quotas. A trace is reserved before its write and released when
 * it turns out not to be stored, so only stored traces count, once each, even when a retry
 * repeats an Idempotency-Key. A month's counter is named for the plan, key and month. It is only
 * ever counted on once seeded with the traces already stored this month: when it is missing (the
 * first trace of the month, a restart, a Redis that lost it), a reservation counts the stored
 * traces and seeds it, the first seed of any process winning (D40), and then reserves. So no
 * process admits against a count that lacks the stored traces, whichever process rebuilt it.
 */
export function createMonthlyQuota({ backend, countStored, countTimeoutMs, now = Date.now }: MonthlyQuotaOptions): MonthlyQuota {
  const counters = backend.counters({ keyPrefix: "ct:quota", ttlSeconds: counterTtlSeconds });
  let month = calendarMonth(now());
  /** Counters this process is seeding, by name: its other reservations wait for the same seed. */
  const seeding = new Map<string, Promise<void>>();

  /** Seeds a missing counter with the key's stored traces, waiting at most `timeoutMs`. */
  async function seed(counter: string, key: { id: string; accountId: string }, since: Date, timeoutMs: number): Promise<void> {
    let seeded = seeding.get(counter);
    if (!seeded) {
      seeded = withTimeLimit(countStored(key, since), countTimeoutMs, () => new QuotaUnavailableError(`counting the stored traces took over ${countTimeoutMs} ms`))
        .then((stored) => counters.seed(counter, stored))
        .finally(() => seeding.delete(counter));
      seeding.set(counter, seeded);
    }
    try {
      await withTimeLimit(seeded, timeoutMs, () => new QuotaUnavailableError(`counting the stored traces took over ${timeoutMs} ms`));
    } catch (error) {
      throw error instanceof QuotaUnavailableError ? error : new QuotaUnavailableError("the stored traces could not be counted", { cause: error });
    }
  }

  return {
    async reserve(key, plan, count = 1, timeoutMs = countTimeoutMs) {
      const at = now();
      if (at < month.start || at >= month.next) month = calendarMonth(at);
      const { start: monthStart, next: nextMonth } = month;
      const counter = `${plan.name}:${key.id}:${month.name}`;
      let consumed = await counters.add(counter, count);
      if (consumed === undefined) {
        await seed(counter, key, new Date(monthStart), Math.min(timeoutMs, countTimeoutMs));
        consumed = await counters.add(counter, count);
        if (consumed === undefined) throw new QuotaUnavailableError("the month's counter was lost while it was rebuilt");
      }
      // The traces before this reservation used consumed - count; what is left of the plan fits.
      const granted = Math.max(0, Math.min(count, plan.perMonth - (consumed - count)));
      if (granted < count) await counters.takeBack(counter, count - granted);
      const decision: QuotaDecision = {
        allowed: granted > 0,
        granted,
        limit: plan.perMonth,
        remaining: Math.max(0, plan.perMonth - (consumed - count + granted)),
        resetAt: Math.floor(nextMonth / 1000),
        retryAfter: Math.max(1, Math.ceil((nextMonth - at) / 1000)),
      };
      return new Reservation(decision, counters, counter, granted);
    },
  };
}

/** A class rather than a closure per trace: the hot path allocates one object, not a function too. */
class Reservation implements QuotaReservation {
  constructor(
    readonly decision: QuotaDecision,
    private readonly counters: SeededCounters,
    private readonly counter: string,
    private held: number,
  ) {}

  async release(count = this.held): Promise<void> {
    const given = Math.min(count, this.held);
    if (given <= 0) return;
    this.held -= given;
    await this.counters.takeBack(this.counter, given);
  }
}

/** The UTC calendar month around `at`: its start, the next month's start (ms) and its name (YYYY-MM). */
function calendarMonth(at: number): { start: number; next: number; name: string } {
  const date = new Date(at);
  const start = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
  return { start, next: Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1), name: date.toISOString().slice(0, 7) };
}

/** The D11 headers for a quota decision. */
export function quotaHeaders(decision: QuotaDecision): HeaderFields {
  return {
    "x-quota-limit": String(decision.limit),
    "x-quota-remaining": String(decision.remaining),
    "x-quota-reset": String(decision.resetAt),
  };
}
