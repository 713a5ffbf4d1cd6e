import type { Collection, Filter } from "mongodb";
import { PriceCheck } from "../../../gen/calltrace/v1/trace_pb.js";
import { hourMs, type UsageCell, type UsageCells } from "../usage-reader.js";
import type { TraceDoc } from "./mongo-trace-doc.js";

/**
 * Usage per UTC hour and status, with calls per latency bucket, of the traces matching `match`.
 * FerretDB 1.24 has no date operators to $group by hour and documents carry only their day, so
 * the matching traces (of at most 48 hours: usage-reader.ts's maxHours) are read, with only the
 * fields summed, and summed here.
 */
export async function mongoHourCells(traces: Collection<TraceDoc>, match: Filter<TraceDoc>): Promise<UsageCells> {
  const sums = new Map<string, UsageCell>();
  const latency = new Map<string, { hour: number; bucket: number; calls: number }>();
  const projection = { _id: 0, receivedAt: 1, "meta.status": 1, costUsd: 1, tokensIn: 1, tokensOut: 1, latencyBucket: 1, priceCheck: 1 };
  for await (const doc of traces.find(match, { projection })) {
    const hour = Math.floor(doc.receivedAt.getTime() / hourMs) * hourMs;
    const status = doc.meta.status;
    const key = `${hour} ${status}`;
    let cell = sums.get(key);
    if (!cell) sums.set(key, (cell = { hour, status, calls: 0, costUsd: 0, tokensIn: 0, tokensOut: 0, unpriced: 0, mismatched: 0 }));
    cell.calls += 1;
    cell.costUsd += doc.costUsd;
    cell.tokensIn += doc.tokensIn;
    cell.tokensOut += doc.tokensOut;
    if (doc.priceCheck === PriceCheck.UNPRICED) cell.unpriced! += 1;
    else if (doc.priceCheck === PriceCheck.MISMATCH) cell.mismatched! += 1;
    const bucketKey = `${hour} ${doc.latencyBucket}`;
    const bucket = latency.get(bucketKey);
    if (bucket) bucket.calls += 1;
    else latency.set(bucketKey, { hour, bucket: doc.latencyBucket, calls: 1 });
  }
  return { sums: [...sums.values()], latency: [...latency.values()] };
}
