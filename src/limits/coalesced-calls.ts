/** One caller waiting for its share of a coalesced call. */
interface Waiter<R> {
  count: number;
  /** The counts of the callers before this one in the same call. */
  before: number;
  resolve(result: R): void;
  reject(error: unknown): void;
}

interface Batch<R> {
  total: number;
  waiters: Waiter<R>[];
}

/**
 * The flushes due this turn, of every coalescer (the per-minute window's, the quota's): run in
 * one callback, one tick, so that their calls leave in one write (redis-writes.ts).
 */
let due: (() => void)[] = [];

function runDue(): void {
  const flushes = due;
  due = [];
  for (const flush of flushes) flush();
}

/**
 * Calls for the same key made within one event-loop turn, answered by ONE call of `call` for
 * their summed count, made once the turn's I/O callbacks have run (setImmediate). Under load a
 * Redis script call, its ioredis command and its insurance timer then serve many requests, not
 * one each. Each caller gets `share` of the answer: the answer with the counts of the callers
 * before it in the turn, in the order they called, so that a counter added to by the sum stands
 * for each caller exactly where the same calls made one by one in that order would have left it.
 */
export function coalesced<A, R>(
  call: (key: string, total: number) => Promise<A>,
  share: (answer: A, before: number, count: number, total: number) => R,
): (key: string, count: number) => Promise<R> {
  let pending = new Map<string, Batch<R>>();
  let scheduled = false;

  const answer = (batch: Batch<R>, answered: A) => {
    for (const waiter of batch.waiters) {
      try {
        waiter.resolve(share(answered, waiter.before, waiter.count, batch.total));
      } catch (error) {
        waiter.reject(error);
      }
    }
  };
  const flush = () => {
    const batches = pending;
    pending = new Map();
    scheduled = false;
    for (const [key, batch] of batches) {
      let called: Promise<A>;
      try {
        called = call(key, batch.total);
      } catch (error) {
        called = Promise.reject(error);
      }
      called.then(
        (answered) => answer(batch, answered),
        (error: unknown) => {
          for (const waiter of batch.waiters) waiter.reject(error);
        },
      );
    }
  };

  return (key, count) =>
    new Promise<R>((resolve, reject) => {
      let batch = pending.get(key);
      if (!batch) {
        batch = { total: 0, waiters: [] };
        pending.set(key, batch);
      }
      batch.waiters.push({ count, before: batch.total, resolve, reject });
      batch.total += count;
      if (!scheduled) {
        scheduled = true;
        if (due.length === 0) setImmediate(runDue);
        due.push(flush);
      }
    });
}
