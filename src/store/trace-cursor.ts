import { TraceOrder } from "../../gen/calltrace/v1/query_pb.js";

/** How a page is sorted: by what, and which way. Ties are always broken by id, the same way. */
export interface TraceSort {
  order: "time" | "cost" | "latency" | "tokens";
  ascending: boolean;
}

export const newestFirst: TraceSort = { order: "time", ascending: false };

export function traceSort(order: TraceOrder, ascending: boolean): TraceSort {
  const by = { [TraceOrder.COST]: "cost", [TraceOrder.LATENCY]: "latency", [TraceOrder.TOKENS]: "tokens" } as const;
  return { order: by[order as keyof typeof by] ?? "time", ascending };
}

/**
 * Where a page of traces ends: the last trace's sort value (its receive time in ms, cost, latency
 * or tokens) and id (keyset pagination).
 */
export interface TraceCursor {
  value: number;
  id: string;
}

/** A cursor that this service did not hand out, was altered, or belongs to another order. */
export class InvalidCursorError extends Error {
  constructor() {
    super("cursor is not valid");
  }
}

/** A letter per order and direction; newest first has none, so cursors handed out before sorting existed stay valid. */
function tagOf(sort: TraceSort): string {
  if (sort.order === "time" && !sort.ascending) return "";
  return `${sort.order[0]}${sort.ascending ? "a" : "d"}:`;
}

/** The opaque form of a cursor: base64url of `[<order><direction>:]<value>.<id>`. */
export function encodeTraceCursor(cursor: TraceCursor, sort: TraceSort = newestFirst): string {
  return Buffer.from(`${tagOf(sort)}${cursor.value}.${cursor.id}`).toString("base64url");
}

export function decodeTraceCursor(text: string, sort: TraceSort = newestFirst): TraceCursor {
  const decoded = Buffer.from(text, "base64url").toString();
  const tag = tagOf(sort);
  const match = decoded.startsWith(tag) ? /^(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)\.([0-9A-Za-z_-]{1,64})$/.exec(decoded.slice(tag.length)) : null;
  const value = Number(match?.[1]);
  if (!match || !Number.isFinite(value)) throw new InvalidCursorError();
  return { value, id: match[2]! };
}

/** Page sizes are kept between 1 and this, whatever the caller asks. */
export const maxPageSize = 1000;

export function clampPageSize(pageSize: number): number {
  return Math.min(maxPageSize, Math.max(1, Math.trunc(pageSize) || 1));
}
