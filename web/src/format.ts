import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";

const integer = new Intl.NumberFormat("en-US");

export function count(n: number | bigint): string {
  return integer.format(n);
}

/** Per-call costs are often fractions of a cent: six decimals show them exactly enough. */
export function usdPrecise(n: number): string {
  return `$${n.toFixed(6)}`;
}

const dollars = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });

/** Totals: cents from a dollar up, four decimals from a cent up, six below (fractions of a cent). */
export function usd(n: number): string {
  if (n >= 1) return `$${dollars.format(n)}`;
  return `$${n.toFixed(n >= 0.01 || n === 0 ? 4 : 6)}`;
}

/** `1 call`, `2 calls`. */
export function plural(n: number | bigint, noun: string): string {
  return `${count(n)} ${noun}${n === 1 || n === 1n ? "" : "s"}`;
}

/** A day as YYYY-MM-DD in UTC. */
export function utcDay(ts: Timestamp | undefined): string {
  return ts ? timestampDate(ts).toISOString().slice(0, 10) : "—";
}

export function ms(n: number): string {
  return `${integer.format(n)} ms`;
}

export function percent(part: number, whole: number): string {
  return whole === 0 ? "0%" : `${((100 * part) / whole).toFixed(part === 0 || part === whole ? 0 : 1)}%`;
}

/** A time as `2025-01-31 14:05:09` in the viewer's zone. */
export function dateTime(ts: Timestamp | Date | undefined): string {
  if (!ts) return "—";
  const d = ts instanceof Date ? ts : timestampDate(ts);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
