import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";

const integer = new Intl.NumberFormat("en-US");

export function count(n: number | bigint): string {
  return integer.format(n);
}

const cents = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const subDollar = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 4 });
const subCent = new Intl.NumberFormat("en-US", { maximumSignificantDigits: 3 });

/**
 * Every amount of money on every page: cents with thousands separators from $1 up
 * ($123,456.79), up to four decimals from a cent ($0.40, $0.0351), and below a cent three
 * significant digits, so fractions of a cent stay visible however small ($0.0065, $0.000057,
 * $0.0000004; Intl writes plain decimals, never exponents). Zero is $0.00.
 */
export function usd(n: number): string {
  if (n === 0) return "$0.00";
  const sign = n < 0 ? "-" : "";
  const a = Math.abs(n);
  const text = a >= 1 ? cents.format(a) : a >= 0.01 ? subDollar.format(a) : subCent.format(a);
  return `${sign}$${text}`;
}

/** An axis label: short ($1.2K, $35, $0.004), as the axis is only a guide. */
export function usdShort(n: number): string {
  if (n >= 1000) return `$${new Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 }).format(n)}`;
  return usd(Number(n.toPrecision(2)));
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

/** A time as `2025-01-31 14:05:09 UTC`: every time on every page is UTC, as the charts' days are, and says so. */
export function dateTime(ts: Timestamp | Date | undefined): string {
  if (!ts) return "—";
  const d = ts instanceof Date ? ts : timestampDate(ts);
  return `${d.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** How long ago, for values that keep changing ("Last used"): `just now`, `5 min ago`, `3 h ago`, `2 days ago`. */
export function ago(ts: Timestamp | undefined, now: number): string {
  if (!ts) return "never";
  const s = Math.max(0, Math.round((now - timestampDate(ts).getTime()) / 1000));
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return plural(Math.floor(s / 86400), "day") + " ago";
}
