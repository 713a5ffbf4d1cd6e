import type { Plan } from "../config/plans.js";
import { withTimeLimit } from "../store/time-limit.js";
import type { LimiterBackend } from "./limiter-backend.js";
import type { HeaderFields } from "./rate-limit-headers.js";
import { type CounterValue, coalescedCounters, type SeededCounters } from "./seeded-counters.js";

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
  /**
   * Tells that `count` of the granted traces (default: all still held) are stored: until a later
   * answer of the month's counter shows it outlived their commit, a rebuild of it may have missed
   * them, and they are added to the rebuilt one (D40).
   */
  stored(count?: number): void;
  /**
   * Tells that the writes of `count` of the granted traces (default 1) were answered before their
   * commit, which may yet store them: they stay reserved until `stored` says whether it did, and
   * are then counted as stored or given back.
   */
  whenCommitted(stored: Promise<boolean>, count?: number): void;
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
  /**
   * `traces` of key `keyId` were not given back: the shared counter (or, with the commit's outcome
   * unknown, the month) still counts them. Told rather than thrown: the request is answered already.
   */
  giveBackLost?: (keyId: string, traces: number, error: unknown) => void;
}

/** A month's counter could not be rebuilt from the stored traces in time (or at all): the request cannot be counted now. */
export class QuotaUnavailableError extends Error {}

/**
 * How long a counter lives. Shorter than a month on purpose: a counter that is gone is rebuilt
 * from the stored traces anyway, and last month's counters need not outlive it by much.
 */
const counterTtlSeconds = 20 * 24 * 3600;

/**
 * The guarantee (docs/operations.md): a key never stores more traces in a calendar month than its
 * plan allows, and while its counter answers it is refused only once the plan's traces are stored
 * or in flight; after restarts, across instances and when Redis is emptied, because a counter is
 * never counted on from zero. A rebuild from the store misses the traces in flight, which their
 * processes add to the rebuilt counter, so a wipe may count a trace twice, never not at all. The
 * exception is the insurance (D24): with Redis down or slow, each process counts on alone.
 *
 * Per-key calendar-month (UTC) quotas. A trace is reserved before its write and released when
 * it turns out not to be stored, so only stored traces count, once each, even when a retry
 * repeats an Idempotency-Key. A month's counter is named for the plan, key and month. It is only
 * ever counted on once seeded with the traces already stored this month: when it is missing (the
 * first trace of the month, a restart, a Redis that lost it), a reservation counts the stored
 * traces and seeds it, the first seed of any process winning (D40), and then reserves. So no
 * process admits against a count that lacks the stored traces, whichever process rebuilt it.
 * Nor against one that lacks its traces in flight: a counter rebuilt while they were (Redis
 * emptied mid-load) is of a new generation, and each process adds them to it (Outstanding).
 */
export function createMonthlyQuota({ backend, countStored, countTimeoutMs, now = Date.now, giveBackLost = () => {} }: MonthlyQuotaOptions): MonthlyQuota {
  // The reservations of one event-loop turn on the same counter are one add to it, its take-backs one take-back (coalescedCounters).
  const counters = coalescedCounters(backend.counters({ keyPrefix: "ct:quota", ttlSeconds: counterTtlSeconds }));
  let month = calendarMonth(now());
  /** Counters this process is seeding, by name: its other reservations wait for the same seed. */
  const seeding = new Map<string, Promise<void>>();
  /** This process's traces that a rebuild of their counter might miss, by counter name. */
  const outstanding = new Map<string, Outstanding>();
  let checking: NodeJS.Timeout | undefined;

  /**
   * A process hears of a rebuilt counter from its next add to it, which may be long in coming
   * for a key whose traffic went elsewhere; meanwhile other processes would admit without its
   * traces. So every outstandingCheckMs, a counter with traces outstanding and no add since the
   * last check is asked for its generation (an add of 0), which also confirms the stored ones.
   */
  function check(): void {
    if (outstanding.size === 0) {
      clearInterval(checking);
      checking = undefined;
      return;
    }
    for (const [counter, tally] of outstanding) {
      if (tally.addedSinceCheck || tally.adding > 0) {
        tally.addedSinceCheck = false;
        continue;
      }
      const storedBefore = tally.stored;
      tally.adding++;
      void counters
        .add(counter, 0)
        .then((answer) => {
          if (answer?.generation !== undefined) observe(tally, counter, answer.generation, storedBefore);
        })
        .catch(() => {})
        .finally(() => {
          tally.adding--;
          tally.forgetIfIdle();
        });
    }
  }

  /**
   * Takes in an answer of `counter` given to an add that began when `tally.stored` was
   * `storedBefore`: the traces stored by then are confirmed when the counter is of the generation
   * they were added to; when it is of another, everything outstanding is added to it.
   */
  function observe(tally: Outstanding, counter: string, generation: string, storedBefore: number): void {
    if (tally.generation === undefined || tally.generation === generation) {
      tally.generation = generation;
      if (storedBefore > tally.confirmed) tally.confirmed = storedBefore;
      return;
    }
    const carry = tally.held + tally.stored - tally.confirmed;
    const confirmedBefore = tally.confirmed;
    const storedNow = tally.stored;
    tally.generation = generation;
    tally.confirmed = storedNow;
    if (carry <= 0) return;
    tally.carried += carry;
    tally.adding++;
    const carried = (answer: CounterValue | undefined) => {
      if (answer?.generation === undefined) {
        // Not added to the shared counter (the insurance answered): carried again on its next answer.
        tally.generation = failedCarry;
        tally.confirmed = Math.min(tally.confirmed, confirmedBefore);
      } else observe(tally, counter, answer.generation, storedNow);
    };
    void counters
      .add(counter, carry, true)
      .then(carried, () => carried(undefined))
      .finally(() => {
        tally.adding--;
        tally.forgetIfIdle();
      });
  }

  /** Seeds a missing counter with the key's stored traces, waiting at most `timeoutMs`. */
  async function seed(counter: string, key: { id: string; accountId: string }, since: Date, timeoutMs: number): Promise<void> {
    let seeded = seeding.get(counter);
    if (!seeded) {
      // A seed whose count began before the counter was lost again is refused (beginSeed): the
      // reservation's add then finds it missing, and the next one counts afresh.
      const counted = counters.beginSeed(counter).then(async (token) => ({ token, stored: await countStored(key, since) }));
      seeded = withTimeLimit(counted, countTimeoutMs, () => new QuotaUnavailableError(`counting the stored traces took over ${countTimeoutMs} ms`))
        .then(({ token, stored }) => counters.seed(counter, stored, token))
        .finally(() => seeding.delete(counter));
      seeding.set(counter, seeded);
    }
    try {
      await withTimeLimit(seeded, timeoutMs, () => new QuotaUnavailableError(`counting the stored traces took over ${timeoutMs} ms`));
    } catch (error) {
      throw error instanceof QuotaUnavailableError ? error : new QuotaUnavailableError("the stored traces could not be counted", { cause: error });
    }
  }

  /**
   * A counter seeded under settleMs ago may still lack other processes' traces in flight (they
   * add them at their next answer of it, or their next check): a reservation on it waits until
   * then, and counts what was carried to it since its add as before itself (D40).
   */
  async function settled(counter: string, answer: CounterValue): Promise<number> {
    await new Promise((resolve) => setTimeout(resolve, settleMs - answer.ageMs!));
    const again = await counters.add(counter, 0);
    // Rebuilt again meanwhile: where this reservation stands in the new counter is not known yet.
    if (!again || again.generation !== answer.generation) throw new QuotaUnavailableError("the month's counter was rebuilt again while it settled");
    return answer.value + (again.carried ?? 0) - (answer.carried ?? 0);
  }

  return {
    async reserve(key, plan, count = 1, timeoutMs = countTimeoutMs) {
      const at = now();
      if (at < month.start || at >= month.next) month = calendarMonth(at);
      const { start: monthStart, next: nextMonth } = month;
      const counter = `${plan.name}:${key.id}:${month.name}`;
      let tally = outstanding.get(counter);
      if (!tally) {
        tally = new Outstanding(outstanding, counter);
        outstanding.set(counter, tally);
        if (!checking) {
          checking = setInterval(check, outstandingCheckMs);
          checking.unref();
        }
      }
      tally.addedSinceCheck = true;
      const { stored: storedBefore, carried: carriedBefore } = tally;
      tally.adding++;
      let answer: CounterValue | undefined;
      try {
        answer = await counters.add(counter, count);
        if (answer === undefined) {
          await seed(counter, key, new Date(monthStart), Math.min(timeoutMs, countTimeoutMs));
          answer = await counters.add(counter, count);
          if (answer === undefined) throw new QuotaUnavailableError("the month's counter was lost while it was rebuilt");
        }
      } finally {
        tally.adding--;
      }
      let consumed = answer.value;
      if (answer.generation === undefined) {
        // The insurance answered (D24): nothing of the shared counter to keep track of.
        tally.forgetIfIdle();
        tally = undefined;
      } else {
        observe(tally, counter, answer.generation, storedBefore);
        tally.held += count;
        // What this process added to a rebuilt counter after this add was sent counts before it.
        consumed += tally.carried - carriedBefore;
        if (answer.ageMs !== undefined && answer.ageMs < settleMs) {
          try {
            consumed = await settled(counter, answer);
          } catch (error) {
            await giveBack(counters, counter, tally, count, (lost) => giveBackLost(key.id, count, lost));
            throw error;
          }
        }
      }
      // The traces before this reservation used consumed - count; what is left of the plan fits.
      const granted = Math.max(0, Math.min(count, plan.perMonth - (consumed - count)));
      const decision: QuotaDecision = {
        allowed: granted > 0,
        granted,
        limit: plan.perMonth,
        remaining: Math.max(0, plan.perMonth - (consumed - count + granted)),
        resetAt: Math.floor(nextMonth / 1000),
        retryAfter: Math.max(1, Math.ceil((nextMonth - at) / 1000)),
      };
      const reservation = new Reservation(decision, counters, counter, count, tally, key.id, giveBackLost);
      if (granted < count) await reservation.release(count - granted);
      return reservation;
    },
  };
}

/** How often a counter with traces outstanding and no adds is asked whether it was rebuilt. */
const outstandingCheckMs = 100;

/** How long after its seed a shared counter is taken to hold every process's traces in flight: past a check, with time to spare. */
const settleMs = 300;

/** A generation no counter has: the next answer of the shared counter carries everything again. */
const failedCarry = "(carry failed)";

/**
 * This process's traces on one month's counter that a rebuild of it might not count (D40): held
 * (granted, neither stored nor given back), and stored but not yet seen counted by a counter of
 * the generation they were added to (`stored - confirmed`). A counter answering another
 * generation was rebuilt from the store without some of them, so all of them are added to it:
 * the month may then count a trace stored before the rebuild counted twice, never one not at all.
 * Forgotten once nothing is outstanding: a counter rebuilt after that missed none of its traces.
 */
class Outstanding {
  /** The generation the held traces are added to; undefined until an answer tells it. */
  generation: string | undefined;
  held = 0;
  /** Traces stored, in all; `confirmed` of them are counted by the counter of `generation`. */
  stored = 0;
  confirmed = 0;
  /** Traces added to rebuilt counters, in all: an add sent before them answered a count without them. */
  carried = 0;
  /** Adds in flight, which may still answer a new generation. */
  adding = 0;
  /** An add began since the last check (so that check need not ask). */
  addedSinceCheck = false;

  constructor(
    private readonly all: Map<string, Outstanding>,
    private readonly counter: string,
  ) {}

  forgetIfIdle(): void {
    if (this.adding === 0 && this.held === 0 && this.stored === this.confirmed && this.all.get(this.counter) === this) this.all.delete(this.counter);
  }
}

/**
 * Takes `count` held traces off `counter`; with a tally, only from the generation they were added
 * to (a counter rebuilt since did not count them). A take-back that fails is told to `lost`.
 */
async function giveBack(
  counters: SeededCounters,
  counter: string,
  tally: Outstanding | undefined,
  count: number,
  lost: (error: unknown) => void,
): Promise<void> {
  if (tally) {
    tally.held -= count;
    tally.forgetIfIdle();
  }
  try {
    await counters.takeBack(counter, count, tally?.generation);
  } catch (error) {
    lost(error);
  }
}

/** A class rather than a closure per trace: the hot path allocates one object, not a function too. */
class Reservation implements QuotaReservation {
  constructor(
    readonly decision: QuotaDecision,
    private readonly counters: SeededCounters,
    private readonly counter: string,
    private held: number,
    /** Where its traces are kept track of; undefined when the insurance counted them. */
    private readonly tally: Outstanding | undefined,
    /** The key whose traces these are, and where a give-back that failed is told (MonthlyQuotaOptions). */
    private readonly keyId: string,
    private readonly giveBackLost: (keyId: string, traces: number, error: unknown) => void,
  ) {}

  private lost(traces: number, error: unknown): void {
    this.giveBackLost(this.keyId, traces, error);
  }

  async release(count = this.held): Promise<void> {
    const given = Math.min(count, this.held);
    if (given <= 0) return;
    this.held -= given;
    await giveBack(this.counters, this.counter, this.tally, given, (error) => this.lost(given, error));
  }

  stored(count = this.held): void {
    const stored = Math.min(count, this.held);
    if (stored <= 0) return;
    this.held -= stored;
    this.counted(stored);
  }

  whenCommitted(stored: Promise<boolean>, count = 1): void {
    const pending = Math.min(count, this.held);
    if (pending <= 0) return;
    // No longer held by this reservation: a release() meanwhile must not give them back.
    this.held -= pending;
    void stored.then(
      (was) => (was ? this.counted(pending) : giveBack(this.counters, this.counter, this.tally, pending, (error) => this.lost(pending, error))),
      (error: unknown) => {
        // The commit's outcome is not known: counted as stored, so the month never counts fewer than were stored.
        this.counted(pending);
        this.lost(pending, error);
      },
    );
  }

  /** `count` traces taken off this reservation's hold are stored. */
  private counted(count: number): void {
    if (!this.tally) return;
    this.tally.held -= count;
    this.tally.stored += count;
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
