/**
 * A first-in first-out queue of fixed capacity that, when full, drops its
 * oldest item to make room and counts the drop: under a long outage the most
 * recent traces are the ones worth keeping, and memory stays bounded.
 */
export class BoundedQueue<T> {
  readonly #items: (T | undefined)[];
  #head = 0;
  #size = 0;
  #dropped = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError("calltrace: queue capacity must be a positive integer");
    }
    this.#items = new Array<T | undefined>(capacity);
  }

  get size(): number {
    return this.#size;
  }

  /** Items dropped so far, by overflow or by `clear()`. */
  get dropped(): number {
    return this.#dropped;
  }

  push(item: T): void {
    if (this.#size === this.capacity) {
      this.#head = (this.#head + 1) % this.capacity;
      this.#size--;
      this.#dropped++;
    }
    this.#items[(this.#head + this.#size) % this.capacity] = item;
    this.#size++;
  }

  shift(): T | undefined {
    if (this.#size === 0) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined;
    this.#head = (this.#head + 1) % this.capacity;
    this.#size--;
    return item;
  }

  /** Empties the queue, counting every item as dropped. */
  clear(): void {
    while (this.shift() !== undefined) this.#dropped++;
  }
}
