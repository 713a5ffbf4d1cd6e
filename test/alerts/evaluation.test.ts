import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type AlertEvent,
  AlertKind,
  type AlertRule,
  AlertRuleSchema,
  AlertScopeKind,
  AlertWindowKind,
} from "../../gen/calltrace/v1/alert_pb.js";
import { newId } from "../../src/store/ids.js";
import { projectWithKeys } from "../read-api/read-support.js";
import { postTrace, startTestService, traceBody, type TestService } from "../support/test-service.js";

// The evaluator in the real service, over real HTTP: traffic crosses rules, events land in the
// outbox once per threshold and window, within the evaluation interval.
const intervalMs = 400;
let service: TestService;

beforeAll(async () => {
  service = await startTestService({
    alertEvaluateMs: intervalMs,
    plans: { free: { per_minute: 100_000, per_month: 1_000_000 }, tiny: { per_minute: 100_000, per_month: 10 } },
  });
});

async function projectWithRule(fields: Exclude<MessageInitShape<typeof AlertRuleSchema>, AlertRule>, plan = "free") {
  const project = await projectWithKeys(service.store, plan);
  const rule = create(AlertRuleSchema, { id: newId("alr"), projectId: project.projectId, name: "rule", ...fields });
  await service.store.alerts.createRule(rule);
  return { ...project, rule };
}

const eventsOf = async (projectId: string): Promise<AlertEvent[]> =>
  (await service.store.alerts.listEvents(projectId, { limit: 100 })).sort((a, b) => timestampMs(a.firedAt!) - timestampMs(b.firedAt!));

/** Waits until `done` holds of the project's events, or fails after `ms`. */
async function eventsUntil(projectId: string, done: (events: AlertEvent[]) => boolean, ms = 10_000): Promise<AlertEvent[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const events = await eventsOf(projectId);
    if (done(events)) return events;
    if (Date.now() > deadline) throw new Error(`events never settled: ${JSON.stringify(events.map((e) => e.id))}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const send = async (key: string, overrides: Record<string, unknown>, count: number, clients = 1) => {
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let i = 0; i < count; i++) expect((await postTrace(service.url, traceBody(key, overrides), { key })).status).toBe(202);
    }),
  );
  return Date.now();
};

const settle = () => new Promise((r) => setTimeout(r, 4 * intervalMs));

describe("alert evaluation", () => {
  it("a daily budget crossed by concurrent clients fires each threshold exactly once in its window, within the interval", async () => {
    const { ingest, projectId, rule } = await projectWithRule({
      kind: AlertKind.SPEND,
      budgetUsd: 0.01,
      window: { kind: AlertWindowKind.DAY },
      scope: { kind: AlertScopeKind.PROJECT },
    });
    await settle(); // the rule is watched, nothing fired
    expect(await eventsOf(projectId)).toEqual([]);
    const crossedAt = await send(ingest.key, { cost_usd: 0.0005 }, 5, 6); // 30 x 0.0005 = 0.015 USD: past 50, 80 and 100 %
    const events = await eventsUntil(projectId, (e) => e.length >= 3);
    expect(events.map((e) => e.thresholdPercent).sort((a, b) => a - b)).toEqual([50, 80, 100]);
    expect(new Set(events.map((e) => e.id)).size).toBe(3);
    for (const e of events) {
      expect(e.ruleId).toBe(rule.id);
      expect(e.resolved).toBe(false);
      expect(timestampMs(e.firedAt!) - crossedAt).toBeLessThan(2 * intervalMs + 1000);
    }
    // Measured when it fired, possibly while the last clients were still sending.
    const full = events.find((e) => e.thresholdPercent === 100)!;
    expect(full.measuredValue).toBeGreaterThanOrEqual(0.01 - 1e-12);
    expect(full.measuredValue).toBeLessThanOrEqual(0.015 + 1e-12);
    expect(full.thresholdValue).toBeCloseTo(0.01, 12);
    // More spend in the same window fires nothing again.
    await send(ingest.key, { cost_usd: 0.01 }, 3);
    await settle();
    expect((await eventsOf(projectId)).length).toBe(3);
  });

  it("an error rate over the last minutes fires once above it, goes back under, and fires again as a new occurrence", async () => {
    const { ingest, projectId } = await projectWithRule({
      kind: AlertKind.ERRORS,
      windowMinutes: 5,
      errorRatePercent: 50,
      minCalls: 4,
    });
    await send(ingest.key, { status: "error", error: "boom" }, 3);
    await settle();
    expect(await eventsOf(projectId)).toEqual([]); // fewer calls than min_calls
    await send(ingest.key, { status: "error", error: "boom" }, 2);
    await eventsUntil(projectId, (e) => e.length === 1);
    await send(ingest.key, {}, 10); // 5 of 15 failed: 33 %
    const under = await eventsUntil(projectId, (e) => e.length === 2);
    expect(under[1]!.resolved).toBe(true);
    await send(ingest.key, { status: "error", error: "boom" }, 20); // 25 of 35: 71 %
    const again = await eventsUntil(projectId, (e) => e.length === 3);
    expect(again.map((e) => [e.resolved, e.thresholdPercent])).toEqual([
      [false, 100],
      [true, 100],
      [false, 100],
    ]);
    expect(new Set(again.map((e) => e.id)).size).toBe(3);
    // Measured when it fired: above 50 %, at most the final 25 of 35.
    expect(again[2]!.measuredValue).toBeGreaterThan(50);
    expect(again[2]!.measuredValue).toBeLessThanOrEqual((100 * 25) / 35 + 1e-9);
  });

  it("p95 latency above its limit fires", async () => {
    const { ingest, projectId } = await projectWithRule({ kind: AlertKind.LATENCY, windowMinutes: 10, p95LatencyMs: 2000 });
    await send(ingest.key, { latency_ms: 100 }, 10);
    await settle();
    expect(await eventsOf(projectId)).toEqual([]);
    await send(ingest.key, { latency_ms: 9000 }, 5);
    const [event] = await eventsUntil(projectId, (e) => e.length === 1);
    expect(event!.kind).toBe(AlertKind.LATENCY);
    expect(event!.measuredValue).toBeGreaterThanOrEqual(9000);
    expect(event!.measuredValue).toBeLessThanOrEqual(9000 * 1.05);
  });

  it("calls to models the price table does not know fire once per model and day", async () => {
    const { ingest, projectId } = await projectWithRule({ kind: AlertKind.UNPRICED });
    await send(ingest.key, {}, 2);
    await settle();
    expect(await eventsOf(projectId)).toEqual([]);
    await send(ingest.key, { model: "in-house-model-a" }, 3);
    await send(ingest.key, { model: "in-house-model-b" }, 1);
    const events = await eventsUntil(projectId, (e) => e.length === 2);
    expect(events.map((e) => e.model).sort()).toEqual(["in-house-model-a", "in-house-model-b"]);
    await send(ingest.key, { model: "in-house-model-a" }, 2);
    await settle();
    expect((await eventsOf(projectId)).length).toBe(2);
  });

  it("a key's monthly quota fires at 80 and 100 %", async () => {
    const { ingest, projectId } = await projectWithRule({ kind: AlertKind.QUOTA }, "tiny");
    await send(ingest.key, {}, 8);
    const first = await eventsUntil(projectId, (e) => e.length === 1);
    expect(first[0]!.thresholdPercent).toBe(80);
    expect(first[0]!.scope).toMatchObject({ kind: AlertScopeKind.KEY, value: ingest.id });
    await send(ingest.key, {}, 2);
    const both = await eventsUntil(projectId, (e) => e.length === 2);
    expect(both.map((e) => e.thresholdPercent)).toEqual([80, 100]);
  });
});
