import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { AlertWindowKind, AlertWindowSchema } from "../../gen/calltrace/v1/alert_pb.js";
import { windowAt } from "../../src/alerts/evaluation/alert-window.js";

// Calendar windows in a project's zone, checked against instants written out by hand.
const at = (iso: string) => Date.parse(iso);
const window = (kind: AlertWindowKind, rollingHours = 0) => create(AlertWindowSchema, { kind, rollingHours });
const bounds = (kind: AlertWindowKind, nowIso: string, zone: string) => {
  const w = windowAt(window(kind), at(nowIso), zone);
  return [new Date(w.startMs).toISOString(), new Date(w.endMs).toISOString()];
};

describe("alert windows", () => {
  it("a day in zones a quarter or half hour off UTC, and UTC itself", () => {
    expect(bounds(AlertWindowKind.DAY, "2026-11-26T20:00:00Z", "Asia/Kathmandu")).toEqual([
      "2026-11-26T18:15:00.000Z",
      "2026-11-27T18:15:00.000Z",
    ]);
    expect(bounds(AlertWindowKind.DAY, "2026-11-26T17:00:00Z", "Asia/Kolkata")).toEqual([
      "2026-11-25T18:30:00.000Z",
      "2026-11-26T18:30:00.000Z",
    ]);
    expect(bounds(AlertWindowKind.DAY, "2026-11-26T17:00:00Z", "")).toEqual(["2026-11-26T00:00:00.000Z", "2026-11-27T00:00:00.000Z"]);
  });

  it("days that daylight saving time makes 23 and 25 hours long", () => {
    expect(bounds(AlertWindowKind.DAY, "2026-03-08T12:00:00Z", "America/New_York")).toEqual([
      "2026-03-08T05:00:00.000Z",
      "2026-03-09T04:00:00.000Z",
    ]);
    expect(bounds(AlertWindowKind.DAY, "2026-11-01T12:00:00Z", "America/New_York")).toEqual([
      "2026-11-01T04:00:00.000Z",
      "2026-11-02T05:00:00.000Z",
    ]);
  });

  it("a week from Monday and a month, across a year's end", () => {
    // Thursday 2026-01-01 in Berlin: the week began on Monday 2025-12-29.
    expect(bounds(AlertWindowKind.WEEK, "2026-01-01T10:00:00Z", "Europe/Berlin")).toEqual([
      "2025-12-28T23:00:00.000Z",
      "2026-01-04T23:00:00.000Z",
    ]);
    expect(bounds(AlertWindowKind.MONTH, "2025-12-31T23:30:00Z", "Europe/Berlin")).toEqual([
      "2025-12-31T23:00:00.000Z",
      "2026-01-31T23:00:00.000Z",
    ]);
    expect(bounds(AlertWindowKind.MONTH, "2026-02-10T00:00:00Z", "America/Los_Angeles")).toEqual([
      "2026-02-01T08:00:00.000Z",
      "2026-03-01T08:00:00.000Z",
    ]);
  });

  it("a rolling window starts at the quarter hour holding now minus its hours, and ends now", () => {
    const w = windowAt(window(AlertWindowKind.ROLLING_HOURS, 3), at("2026-11-26T20:07:30Z"), "Asia/Kolkata");
    expect(new Date(w.startMs).toISOString()).toBe("2026-11-26T17:00:00.000Z");
    expect(w.endMs).toBe(at("2026-11-26T20:07:30Z"));
  });
});
