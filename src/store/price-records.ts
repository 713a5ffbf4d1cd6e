import type { Price } from "../../sdk/typescript/src/price-table.js";
import type { CustomPriceRecord, PriceMatchKind, RepriceJobRecord, RepriceState } from "./price-store.js";

/** A time as an adapter keeps it: a Date (MongoDB) or epoch milliseconds (SQLite). */
type StoredTime = Date | number;

/** A custom price as an adapter reads it back: its project as accountId, its times as stored; the embedded store keeps the price as JSON text. */
export type StoredPrice = Pick<CustomPriceRecord, "id" | "provider" | "pattern"> & {
  accountId: string;
  matchKind: string;
  price: Price | string;
  /** null or absent: none. */
  effectiveFrom?: StoredTime | null;
  effectiveUntil?: StoredTime | null;
  createdAt: StoredTime;
  updatedAt: StoredTime;
};

/** A re-price job as an adapter reads it back: its project as accountId, its times as stored. */
export type StoredRepriceJob = Pick<RepriceJobRecord, "id" | "total" | "done" | "changed" | "cursor" | "error"> & {
  accountId: string;
  state: string;
  from: StoredTime;
  until: StoredTime;
  createdAt: StoredTime;
  updatedAt: StoredTime;
};

/** The one mapping of a stored custom price to its record, for every adapter. */
export function customPriceRecord(stored: StoredPrice): CustomPriceRecord {
  return {
    id: stored.id,
    projectId: stored.accountId,
    provider: stored.provider,
    matchKind: stored.matchKind as PriceMatchKind,
    pattern: stored.pattern,
    price: typeof stored.price === "string" ? (JSON.parse(stored.price) as Price) : stored.price,
    effectiveFrom: optionalTime(stored.effectiveFrom),
    effectiveUntil: optionalTime(stored.effectiveUntil),
    createdAt: new Date(stored.createdAt),
    updatedAt: new Date(stored.updatedAt),
  };
}

/** The one mapping of a stored re-price job to its record, for every adapter. */
export function repriceJobRecord(stored: StoredRepriceJob): RepriceJobRecord {
  return {
    id: stored.id,
    projectId: stored.accountId,
    from: new Date(stored.from),
    until: new Date(stored.until),
    state: stored.state as RepriceState,
    total: stored.total,
    done: stored.done,
    changed: stored.changed,
    cursor: stored.cursor,
    error: stored.error,
    createdAt: new Date(stored.createdAt),
    updatedAt: new Date(stored.updatedAt),
  };
}

function optionalTime(time: StoredTime | null | undefined): Date | undefined {
  return time === null || time === undefined ? undefined : new Date(time);
}
