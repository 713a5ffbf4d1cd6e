import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { histogramBoundsMs, latencyBucket, latencyBucketBound, latencyBucketSql } from "../../src/store/latency-bucket.js";

/** The embedded store's reads bucket a call's latency in SQL: the same bucket as the writer's JavaScript, at every bound and beside it. */
describe("latencyBucketSql", () => {
  it("answers latencyBucket for every latency at, below and above each bucket's bound, and past the last", () => {
    const db = new Database(":memory:");
    const bucketOf = db.prepare(`SELECT ${latencyBucketSql("latency_ms")} AS bucket FROM (SELECT ? AS latency_ms)`).pluck();
    const latencies = new Set<number>([-1, 0, 1, 2, 19, 20, 21, ...histogramBoundsMs, 2_147_483_647, 2_147_483_648, 9e15]);
    for (let bucket = 0; latencyBucketBound(bucket) < 2_147_483_647; bucket++) {
      const bound = latencyBucketBound(bucket);
      for (const ms of [bound - 1, bound, bound + 1]) latencies.add(ms);
    }
    for (let ms = 0; ms <= 70_000; ms += 7) latencies.add(ms);
    expect(latencies.size).toBeGreaterThan(10_000);
    const differing = [...latencies].filter((ms) => bucketOf.get(ms) !== latencyBucket(ms));
    expect(differing).toEqual([]);
    // Every bucket is reached, the last past the largest bound.
    expect(new Set([...latencies].map((ms) => bucketOf.get(ms))).size).toBe(latencyBucket(2_147_483_647) + 1);
    db.close();
  });
});
