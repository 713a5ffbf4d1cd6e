import type { Plan } from "../config/plans.js";
import { withTimeLimit } from "../store/time-limit.js";
import type { LimiterBackend } from "./limiter-backend.js";
import { settle } from "./per-minute-limiter.js";
import type { HeaderFields } from "./rate-limit-headers.js";

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
 * How long a counter lives. Shorter than a month on purpose: the in-process limiter cannot time
 * more than 24.8 days, and a counter that is gone is rebuilt from the stored traces anyway.
 */
const counterTtlSeconds = 20 * 24 * 3600;

/**
 * Per-key calendar-month (UTC) quotas. A trace is reserved before its write and released when
 * it turns out not to be stored, so only stored traces count, once each, even when a retry
 * repeats an Idempotency-Key. A month's counter is named for the month; when it is created (the
 * first trace of the month, after a restart of the in-process limiter, or after Redis lost it)
 * the traces already stored this month are added to it, so counts survive restarts.
 */
export function createMonthlyQuota({ backend, countStored, countTimeoutMs, now = Date.now }: MonthlyQuotaOptions): MonthlyQuota {
  const byPlan = new Map<string, ReturnType<LimiterBackend["limiter"]>>();
  let month = calendarMonth(now());
  /** Counters being rebuilt from the stored traces, by name, with how many there are: their other reservations wait for it. */
  const seeding = new Map<string, Promise<number>>();

  /** Adds the stored traces to a new counter and answers how many; on failure the counter is dropped, so the next reservation rebuilds it. */
  async function seed(
    limiter: ReturnType<LimiterBackend["limiter"]>,
    counter: string,
    key: { id: string; accountId: string },
    since: Date,
    timeoutMs: number,
  ) {
    try {
      const stored = await withTimeLimit(
        countStored(key, since),
        timeoutMs,
        () => new QuotaUnavailableError(`counting the stored traces took over ${timeoutMs} ms`),
      );
      if (stored > 0) await limiter.penalty(counter, stored);
      return stored;
    } catch (error) {
      await limiter.delete(counter).catch(() => {});
      throw error instanceof QuotaUnavailableError
        ? error
        : new QuotaUnavailableError("the stored traces could not be counted", { cause: error });
    }
  }

  return {
    async reserve(key, plan, count = 1, timeoutMs = countTimeoutMs) {
      let limiter = byPlan.get(plan.name);
      if (!limiter) {
        limiter = backend.limiter({ keyPrefix: `ct:quota:${plan.name}`, points: plan.perMonth, duration: counterTtlSeconds });
        byPlan.set(plan.name, limiter);
      }
      const at = now();
      if (at < month.start || at >= month.next) month = calendarMonth(at);
      const { start: monthStart, next: nextMonth } = month;
      const counter = `${key.id}:${month.name}`;
      const [res] = await settle(limiter.consume(counter, count));
      let consumed = res.consumedPoints;
      if (res.isFirstInDuration) {
        // The first reservation of a new counter (a new month, a restart, a Redis that lost it)
        // rebuilds it; reservations racing it in this process wait for that instead of being
        // admitted against a count that lacks the month's stored traces.
        const seeded = seed(limiter, counter, key, new Date(monthStart), Math.min(timeoutMs, countTimeoutMs));
        seeding.set(counter, seeded);
        try {
          consumed += await seeded;
        } finally {
          seeding.delete(counter);
        }
      } else if (seeding.has(counter)) {
        // Counted before the stored traces were added to the counter: its place is behind them.
        consumed += await seeding.get(counter)!;
      }
      // The traces before this reservation used consumed - count; what is left of the plan fits.
      const granted = Math.max(0, Math.min(count, plan.perMonth - (consumed - count)));
      if (granted < count) await limiter.reward(counter, count - granted);
      const decision: QuotaDecision = {
        allowed: granted > 0,
        granted,
        limit: plan.perMonth,
        remaining: Math.max(0, plan.perMonth - (consumed - count + granted)),
        resetAt: Math.floor(nextMonth / 1000),
        retryAfter: Math.max(1, Math.ceil((nextMonth - at) / 1000)),
      };
      return new Reservation(decision, limiter, counter, granted);
    },
  };
}

/** A class rather than a closure per trace: the hot path allocates one object, not a function too. */
class Reservation implements QuotaReservation {
  constructor(
    readonly decision: QuotaDecision,
    private readonly limiter: ReturnType<LimiterBackend["limiter"]>,
    private readonly counter: string,
    private held: number,
  ) {}

  async release(count = this.held): Promise<void> {
    const given = Math.min(count, this.held);
    if (given <= 0) return;
    this.held -= given;
    await this.limiter.reward(this.counter, given);
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
