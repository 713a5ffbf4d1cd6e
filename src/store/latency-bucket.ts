/**
 * Latency buckets shared by every store, so percentiles and histograms come out the same
 * whichever adapter computes them. Stores group by bucket number rather than by exact latency
 * because FerretDB's aggregation has no $percentile, $avg, $min or $max (see docs/mongodb.md):
 * counting per bucket is a plain $group with $sum, and a few hundred buckets bound the work.
 */

/** Bounds of the histogram the dashboard draws; each is also a bound of the fine buckets. */
export const histogramBoundsMs = [50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000] as const;

const maxLatencyMs = 2_147_483_647;

/**
 * Upper bounds (inclusive) of the fine buckets: every millisecond up to 20, then 5% steps, plus
 * the histogram's bounds. A percentile read from them is at most 5% above the true value.
 */
const boundsMs: readonly number[] = (() => {
  const bounds = new Set<number>(histogramBoundsMs);
  for (let ms = 0; ms <= 20; ms++) bounds.add(ms);
  for (let ms = 20; ms < maxLatencyMs; ms = Math.min(maxLatencyMs, Math.ceil(ms * 1.05))) bounds.add(ms);
  bounds.add(maxLatencyMs);
  return [...bounds].sort((a, b) => a - b);
})();

/** The fine bucket of a latency: the index of the first bound at or above it. */
export function latencyBucket(latencyMs: number): number {
  let low = 0;
  let high = boundsMs.length - 1;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (boundsMs[mid]! >= latencyMs) high = mid;
    else low = mid + 1;
  }
  return low;
}

/**
 * SQL for `latencyBucket` of a column: the same search over the same bounds, as nested CASEs
 * (about nine comparisons a row). A read grouping a user's calls by bucket evaluates it per call,
 * where the registered JavaScript function cost a call into V8 each.
 */
export function latencyBucketSql(column: string): string {
  const search = (low: number, high: number): string => {
    if (low === high) return String(low);
    const mid = (low + high) >> 1;
    return `CASE WHEN ${column} <= ${boundsMs[mid]} THEN ${search(low, mid)} ELSE ${search(mid + 1, high)} END`;
  };
  return search(0, boundsMs.length - 1);
}

/** The inclusive upper bound of a fine bucket, in milliseconds. */
export function latencyBucketBound(bucket: number): number {
  return boundsMs[Math.min(bucket, boundsMs.length - 1)]!;
}

/**
 * The `p` percentile (0 to 1) by nearest rank over calls counted per bucket (cells of one bucket
 * may repeat), as the bound of its bucket; 0 without calls. `calls` is their total where the
 * caller counted it apart (cells that count errors too); by default the buckets' sum.
 */
export function bucketPercentile(cells: readonly { bucket: number; calls: number }[], p: number, calls?: number): number {
  const perBucket = new Map<number, number>();
  for (const cell of cells) perBucket.set(cell.bucket, (perBucket.get(cell.bucket) ?? 0) + cell.calls);
  const total = calls ?? [...perBucket.values()].reduce((a, b) => a + b, 0);
  if (total === 0) return 0;
  const rank = Math.ceil(p * total);
  let seen = 0;
  for (const [bucket, n] of [...perBucket.entries()].sort((a, b) => a[0] - b[0])) {
    seen += n;
    if (seen >= rank) return latencyBucketBound(bucket);
  }
  return 0;
}
