import { type AlertWindow, AlertWindowKind } from "../../../gen/calltrace/v1/alert_pb.js";
import { quarterMs } from "../../store/scope-counters.js";

/** A window measured: [startMs, endMs). */
export interface WindowBounds {
  startMs: number;
  endMs: number;
}

const hourMs = 3_600_000;

/**
 * The window a spend rule measures at `nowMs`: the calendar day, week (from Monday) or month
 * that holds it in `timeZone` (IANA; "" is UTC), or the last `rolling_hours` hours from the
 * quarter hour they begin in (the counters' resolution, scope-counters.ts), to now.
 */
export function windowAt(window: AlertWindow | undefined, nowMs: number, timeZone: string): WindowBounds {
  const kind = window?.kind ?? AlertWindowKind.MONTH;
  if (kind === AlertWindowKind.ROLLING_HOURS) {
    const hours = Math.max(1, window!.rollingHours);
    return { startMs: Math.floor((nowMs - hours * hourMs) / quarterMs) * quarterMs, endMs: nowMs };
  }
  const { year, month, day, weekday } = wallDate(nowMs, timeZone);
  switch (kind) {
    case AlertWindowKind.DAY:
      return { startMs: zonedMidnight(year, month, day, timeZone), endMs: zonedMidnight(year, month, day + 1, timeZone) };
    case AlertWindowKind.WEEK: {
      const monday = day - ((weekday + 6) % 7);
      return { startMs: zonedMidnight(year, month, monday, timeZone), endMs: zonedMidnight(year, month, monday + 7, timeZone) };
    }
    default:
      return { startMs: zonedMidnight(year, month, 1, timeZone), endMs: zonedMidnight(year, month + 1, 1, timeZone) };
  }
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** The wall-clock date at `ms` in a zone (month 1-12; weekday 0 = Sunday). */
function wallDate(ms: number, timeZone: string) {
  const parts = wallParts(ms, timeZone);
  return { ...parts, weekday: new Date(Date.UTC(parts.year, parts.month - 1, parts.day)).getUTCDay() };
}

function wallParts(ms: number, timeZone: string) {
  const zone = timeZone || "UTC";
  let format = formats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formats.set(zone, format);
  }
  const p = Object.fromEntries(format.formatToParts(new Date(ms)).map((x) => [x.type, Number(x.value)]));
  return { year: p.year!, month: p.month!, day: p.day!, hour: p.hour!, minute: p.minute!, second: p.second! };
}

/** The zone's offset from UTC at `ms`, in ms (wall clock minus UTC). */
function offsetAt(ms: number, timeZone: string): number {
  const p = wallParts(ms, timeZone);
  return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) - Math.floor(ms / 1000) * 1000;
}

/**
 * The instant of 00:00 on a wall-clock date in a zone (day and month may overflow, as Date.UTC
 * takes them). Where a zone skips midnight (a transition at 00:00), the first instant after it.
 */
export function zonedMidnight(year: number, month: number, day: number, timeZone: string): number {
  const wall = Date.UTC(year, month - 1, day);
  let guess = wall - offsetAt(wall, timeZone);
  // Twice: the offset at the first guess may differ from the offset at the answer (a transition between).
  guess = wall - offsetAt(guess, timeZone);
  const offset = offsetAt(guess, timeZone);
  return wall - offset;
}
