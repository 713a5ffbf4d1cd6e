import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { AlertKind, type AlertRule, AlertScopeKind, AlertWindowKind } from "../../../gen/calltrace/v1/alert_pb.js";
import { TraceFilterSchema } from "../../../gen/calltrace/v1/query_pb.js";
import type { Plans } from "../../config/plans.js";
import type { KeyStore } from "../../store/key-store.js";
import { isActiveKey } from "../../store/records.js";
import type { ScopeCounters } from "../../store/scope-counters.js";
import { scopeKey } from "../../store/scope-keys.js";
import type { TeamStore } from "../../store/team-store.js";
import type { TraceReader } from "../../store/trace-reader.js";
import { type WindowBounds, windowAt } from "./alert-window.js";
import { measureSpend } from "./measure-spend.js";
import { measureTrailing } from "./measure-trailing.js";

/** What measuring reads: the scope counters, and for unpriced calls and quotas the roll-ups and quota counts. */
export interface MeasureDeps {
  counters: ScopeCounters;
  teams: Pick<TeamStore, "getProject">;
  reader: Pick<TraceReader, "usageByModel">;
  keys: Pick<KeyStore, "listKeys">;
  plans: Plans;
  /** A key's traces this UTC month (the monthly quota's own count, limits/stored-trace-count.ts). */
  monthlyCount: (key: { id: string; accountId: string }, monthStart: Date) => Promise<number>;
}

/** One measured value of a rule against its limit (100 %), over a window. */
export interface Measurement {
  /** Distinguishes the values of one rule that watches several things (a quota per key): "" otherwise. */
  part: string;
  value: number;
  limit: number;
  window: WindowBounds;
  /** Calendar windows fire once per window; moving ones go back under. */
  moving: boolean;
  /** Errors and latency exceed their limit; spend and quota reach it. */
  strictly: boolean;
  /** False while the value does not count (errors with fewer calls than min_calls). */
  counts: boolean;
  /** Unpriced calls: the models with calls the price table does not know in the window. */
  models?: string[];
  /** The scope of this part when it is narrower than the rule's (a quota rule over the project: each key). */
  keyId?: string;
}

const dayMs = 86_400_000;

/** Measures a rule now; a quota rule over a project answers one measurement per active key. */
export async function measureRule(deps: MeasureDeps, rule: AlertRule, nowMs: number): Promise<Measurement[]> {
  const scope = scopeKey(rule.scope);
  switch (rule.kind) {
    case AlertKind.SPEND: {
      const project = await deps.teams.getProject(rule.projectId);
      const window = windowAt(rule.window, nowMs, project?.timeZone ?? "");
      await deps.counters.watch(rule.projectId, [scope]);
      const value = await measureSpend(deps.counters, rule.projectId, scope, window);
      const moving = rule.window?.kind === AlertWindowKind.ROLLING_HOURS;
      return [{ part: "", value, limit: rule.budgetUsd, window, moving, strictly: false, counts: true }];
    }
    case AlertKind.ERRORS:
    case AlertKind.LATENCY: {
      await deps.counters.watch(rule.projectId, [scope]);
      const m = await measureTrailing(deps.counters, rule.projectId, scope, rule.windowMinutes, nowMs);
      const errors = rule.kind === AlertKind.ERRORS;
      return [
        {
          part: "",
          value: errors ? m.errorRatePercent : m.p95LatencyMs,
          limit: errors ? rule.errorRatePercent : rule.p95LatencyMs,
          window: m.window,
          moving: true,
          strictly: true,
          counts: errors ? m.calls >= Math.max(1, rule.minCalls) : m.calls > 0,
        },
      ];
    }
    case AlertKind.UNPRICED: {
      const window = { startMs: Math.floor(nowMs / dayMs) * dayMs, endMs: Math.floor(nowMs / dayMs) * dayMs + dayMs };
      const usage = await deps.reader.usageByModel(rule.projectId, scopeFilter(rule, window.startMs));
      const models = usage.filter((m) => Number(m.totals?.unpricedCalls ?? 0) > 0).map((m) => m.model);
      return [{ part: "", value: models.length, limit: 1, window, moving: false, strictly: false, counts: true, models }];
    }
    case AlertKind.QUOTA: {
      const project = await deps.teams.getProject(rule.projectId);
      const plan = project && deps.plans.get(project.plan);
      if (!plan || plan.perMonth <= 0) return [];
      const now = new Date(nowMs);
      const monthStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
      const window = { startMs: monthStart, endMs: Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1) };
      const keys =
        rule.scope?.kind === AlertScopeKind.KEY
          ? [{ id: rule.scope.value, accountId: rule.projectId }]
          : (await deps.keys.listKeys(rule.projectId)).filter((k) => k.scope === "ingest" && isActiveKey(k, now));
      return Promise.all(
        keys.map(async (key) => ({
          part: key.id,
          keyId: key.id,
          value: await deps.monthlyCount(key, new Date(monthStart)),
          limit: plan.perMonth,
          window,
          moving: false,
          strictly: false,
          counts: true,
        })),
      );
    }
    default:
      return [];
  }
}

/** The dashboard's filter for a rule's scope from `sinceMs` (unpriced calls are read from the roll-ups by model). */
function scopeFilter(rule: AlertRule, sinceMs: number) {
  const s = rule.scope;
  const value = s?.value ?? "";
  return create(TraceFilterSchema, {
    since: timestampFromMs(sinceMs),
    ...(s?.kind === AlertScopeKind.KEY ? { keyId: value } : {}),
    ...(s?.kind === AlertScopeKind.MODEL ? { model: value } : {}),
    ...(s?.kind === AlertScopeKind.USER ? { userId: value } : {}),
    ...(s?.kind === AlertScopeKind.TAG ? { tags: [value] } : {}),
    ...(s?.kind === AlertScopeKind.ENVIRONMENT ? { environment: value } : {}),
    ...(s?.kind === AlertScopeKind.METADATA ? { metadata: { [s.metadataKey]: value } } : {}),
  });
}
