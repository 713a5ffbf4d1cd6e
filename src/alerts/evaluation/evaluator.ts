import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { randomUUID } from "node:crypto";
import { AlertEventSchema, AlertKind, type AlertRule, AlertScopeKind } from "../../../gen/calltrace/v1/alert_pb.js";
import { type AlertRuleValue, AlertRuleValueSchema } from "../../../gen/calltrace/v1/alert_service_pb.js";
import type { Logger } from "../../log/logger.js";
import type { AlertStore } from "../../store/alert-store.js";
import { scopeKey } from "../../store/scope-keys.js";
import { type Crossing, calendarCrossings, type LevelState, movingCrossings, unpricedCrossings } from "./crossings.js";
import { type MeasureDeps, type Measurement, measureRule } from "./measure-rule.js";

export interface EvaluatorDeps extends MeasureDeps {
  alerts: Pick<AlertStore, "listAllRules" | "readRuleState" | "writeRuleState" | "enqueueEvent" | "tryLease">;
  /** ALERT_EVALUATE_MS: how often the instance holding the lease evaluates every rule. */
  intervalMs: number;
  logger: Logger;
  /** Told when events were enqueued, so the delivery worker looks at once. */
  onEnqueued?: () => void;
  now?: () => number;
}

export interface Evaluator {
  /** One evaluation of every rule, if this instance holds the lease (tests; the loop runs it too). */
  evaluate(): Promise<void>;
  close(): Promise<void>;
}

const leaseName = "alert-evaluator";
const pruneEveryMs = 3_600_000;
const defaultThresholds: Partial<Record<AlertKind, number[]>> = {
  [AlertKind.SPEND]: [50, 80, 100],
  [AlertKind.QUOTA]: [80, 100],
};

/** A rule's thresholds: its own, else its kind's defaults; errors and latency fire at 100 %. */
function thresholdsOf(rule: AlertRule): number[] {
  if (rule.kind === AlertKind.ERRORS || rule.kind === AlertKind.LATENCY) return [100];
  const own = rule.thresholdsPercent.length > 0 ? [...rule.thresholdsPercent] : (defaultThresholds[rule.kind] ?? [100]);
  return own.sort((a, b) => a - b);
}

/**
 * The evaluation loop: every `intervalMs`, the one instance holding the store's lease measures
 * every rule (measure-rule.ts), works out its crossings (crossings.ts), enqueues them as events
 * (the outbox; idempotent by id) and then writes the rule's state, so a crash in between sends
 * nothing twice. Hourly it prunes the scope counters to what rules still watch.
 */
export function startEvaluator(deps: EvaluatorDeps): Evaluator {
  const now = deps.now ?? Date.now;
  const holder = randomUUID();
  let lastPrune = 0;
  let running: Promise<void> | undefined;
  let closed = false;

  const evaluateRule = async (rule: AlertRule, at: number) => {
    const measurements = await measureRule(deps, rule, at);
    const stored = await deps.alerts.readRuleState(rule.id);
    const state = (stored ? JSON.parse(stored) : {}) as Record<string, unknown>;
    const next: Record<string, unknown> = {};
    const events = [];
    for (const m of measurements) {
      const { crossings, state: partState } = crossingsOf(rule, m, state[m.part] as never, at);
      next[m.part] = partState;
      for (const c of crossings) events.push(eventOf(rule, m, c, at));
    }
    for (const event of events) await deps.alerts.enqueueEvent(event);
    await deps.alerts.writeRuleState(rule.id, JSON.stringify(next));
    if (events.length > 0) deps.onEnqueued?.();
  };

  const evaluate = async () => {
    if (!(await deps.alerts.tryLease(leaseName, holder, Math.max(3 * deps.intervalMs, 30_000)))) return;
    const at = now();
    const rules = await deps.alerts.listAllRules();
    for (const rule of rules) {
      try {
        await evaluateRule(rule, at);
      } catch (error) {
        deps.logger.error({ err: error, ruleId: rule.id }, "alert rule evaluation failed");
      }
    }
    if (at - lastPrune >= pruneEveryMs) {
      lastPrune = at;
      const keep = new Map<string, Set<string>>();
      for (const rule of rules) {
        const scopes = keep.get(rule.projectId) ?? new Set<string>();
        scopes.add(scopeKey(rule.scope));
        keep.set(rule.projectId, scopes);
      }
      await deps.counters.prune(at, keep);
    }
  };

  const tick = () => {
    if (closed || running) return;
    running = evaluate()
      .catch((error: unknown) => deps.logger.error({ err: error }, "alert evaluation failed"))
      .finally(() => (running = undefined));
  };
  const timer = setInterval(tick, deps.intervalMs);
  timer.unref();
  tick();

  return {
    evaluate,
    async close() {
      closed = true;
      clearInterval(timer);
      await running;
    },
  };
}

function crossingsOf(
  rule: AlertRule,
  m: Measurement,
  state: unknown,
  at: number,
): { crossings: (Crossing & { model?: string })[]; state: unknown } {
  const ruleId = m.part === "" ? rule.id : `${rule.id}.${m.part}`;
  if (rule.kind === AlertKind.UNPRICED) {
    return unpricedCrossings(
      ruleId,
      new Date(at).toISOString().slice(0, 10),
      m.models ?? [],
      (state ?? {}) as { day?: string; models?: string[] },
    );
  }
  const input = { ruleId, value: m.value, limit: m.limit, thresholdsPercent: thresholdsOf(rule), strictly: m.strictly, counts: m.counts };
  return m.moving
    ? movingCrossings(input, (state ?? {}) as LevelState)
    : calendarCrossings(input, m.window.startMs, (state ?? {}) as LevelState);
}

function eventOf(rule: AlertRule, m: Measurement, c: Crossing & { model?: string }, at: number) {
  return create(AlertEventSchema, {
    id: c.id,
    projectId: rule.projectId,
    ruleId: rule.id,
    kind: rule.kind,
    scope: m.keyId === undefined ? rule.scope : { kind: AlertScopeKind.KEY, value: m.keyId },
    windowStart: timestampFromMs(m.window.startMs),
    windowEnd: timestampFromMs(m.window.endMs),
    thresholdPercent: c.thresholdPercent,
    thresholdValue: c.thresholdValue,
    measuredValue: m.value,
    resolved: c.resolved,
    model: c.model ?? "",
    firedAt: timestampFromMs(at),
  });
}

/** Each rule's current value for AlertService's list (a quota rule over several keys: the key nearest its limit). */
export function ruleValues(deps: MeasureDeps, now: () => number = Date.now) {
  return async (_projectId: string, rules: AlertRule[]): Promise<AlertRuleValue[]> => {
    const at = now();
    const values = await Promise.all(
      rules.map(async (rule) => {
        const measured = await measureRule(deps, rule, at);
        const top = measured.reduce<Measurement | undefined>((a, b) => (!a || b.value / b.limit > a.value / a.limit ? b : a), undefined);
        if (!top) return undefined;
        return create(AlertRuleValueSchema, {
          ruleId: rule.id,
          value: top.value,
          limit: top.limit,
          windowStart: timestampFromMs(top.window.startMs),
          windowEnd: timestampFromMs(top.window.endMs),
          measuredAt: timestampFromMs(at),
        });
      }),
    );
    return values.filter((v): v is AlertRuleValue => v !== undefined);
  };
}
