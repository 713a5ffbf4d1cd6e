import { describe, expect, it } from "vitest";
import { BoundedQueue } from "../src/bounded-queue.js";

describe("BoundedQueue", () => {
  it("is first in, first out", () => {
    const queue = new BoundedQueue<number>(3);
    for (const n of [1, 2, 3]) queue.push(n);
    expect([queue.shift(), queue.shift(), queue.shift(), queue.shift()]).toEqual([1, 2, 3, undefined]);
  });

  it("drops the oldest item when full and counts the drop", () => {
    const queue = new BoundedQueue<number>(2);
    for (const n of [1, 2, 3, 4]) queue.push(n);
    expect(queue.dropped).toBe(2);
    expect(queue.size).toBe(2);
    expect([queue.shift(), queue.shift()]).toEqual([3, 4]);
  });

  it("wraps around its buffer", () => {
    const queue = new BoundedQueue<number>(2);
    for (let n = 0; n < 10; n++) {
      queue.push(n);
      expect(queue.shift()).toBe(n);
    }
    expect(queue.dropped).toBe(0);
  });

  it("counts cleared items as dropped", () => {
    const queue = new BoundedQueue<number>(5);
    for (const n of [1, 2, 3]) queue.push(n);
    queue.clear();
    expect([queue.size, queue.dropped]).toEqual([0, 3]);
  });

  it("refuses a capacity below 1", () => {
    expect(() => new BoundedQueue(0)).toThrow(RangeError);
  });
});
