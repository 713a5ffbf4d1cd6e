/**
 * Runs tasks one after another per key, a task holding all its keys at once. Keys are taken in
 * arrival order and all together, so tasks never wait on each other in a cycle.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(keys: Iterable<string>, task: () => Promise<T>): Promise<T> {
    const held = [...new Set(keys)];
    const before = held.map((k) => this.tails.get(k)).filter((p) => p !== undefined);
    let release!: () => void;
    const done = new Promise<void>((resolve) => (release = resolve));
    for (const key of held) this.tails.set(key, done);
    try {
      if (before.length > 0) await Promise.all(before);
      return await task();
    } finally {
      release();
      for (const key of held) if (this.tails.get(key) === done) this.tails.delete(key);
    }
  }
}
