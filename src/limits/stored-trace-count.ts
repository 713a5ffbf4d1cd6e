import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import type { Store } from "../store/store.js";

/**
 * A key's traces stored since `since`: what seeds the monthly quota's counter and what quota
 * alerts measure. The store's own count where it keeps one (MongoDB), else the roll-ups.
 */
export function storedTraceCount(store: Pick<Store, "usageTotals"> & { monthlyTraceCount?: Store["monthlyTraceCount"] }) {
  return async (key: { id: string; accountId: string }, since: Date): Promise<number> => {
    if (store.monthlyTraceCount) return store.monthlyTraceCount(key, since);
    const totals = await store.usageTotals(key.accountId, create(TraceFilterSchema, { keyId: key.id, since: timestampFromDate(since) }));
    return Number(totals.calls);
  };
}
