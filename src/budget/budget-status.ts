import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { AlertKind, type AlertRule, AlertScopeKind, type BudgetStatus, BudgetStatusSchema } from "../../gen/calltrace/v1/alert_pb.js";
import { measureBudget } from "../alerts/evaluation/measure-spend.js";
import type { AlertStore } from "../store/alert-store.js";
import type { ScopeCounters } from "../store/scope-counters.js";
import type { TeamStore } from "../store/team-store.js";

export interface BudgetStatusDeps {
  rules: Pick<AlertStore, "listRules">;
  teams: Pick<TeamStore, "getProject">;
  counters: ScopeCounters;
  /** How long one key's answer is reused: SDKs poll every few seconds (docs/alerts.md, "Budget status"). */
  cacheMs: number;
  now?: () => number;
}

/** The key an ingest key's status is for. */
export interface BudgetKey {
  id: string;
  accountId: string;
}

/** Whether a rule's scope may count calls made with this key: any but another key's. */
function countsKey(rule: AlertRule, key: BudgetKey): boolean {
  return rule.kind === AlertKind.SPEND && (rule.scope?.kind !== AlertScopeKind.KEY || rule.scope.value === key.id);
}

/**
 * The budgets that count a key's calls, measured from the scopes' counters, each key's answer
 * kept for `cacheMs` (concurrent asks share one measurement), so that polling costs little.
 */
export function budgetStatusReader(deps: BudgetStatusDeps): (key: BudgetKey) => Promise<BudgetStatus> {
  const now = deps.now ?? Date.now;
  const cache = new Map<string, { at: number; status: Promise<BudgetStatus> }>();

  const measure = async (key: BudgetKey, at: number): Promise<BudgetStatus> => {
    const [rules, project] = await Promise.all([deps.rules.listRules(key.accountId), deps.teams.getProject(key.accountId)]);
    const timeZone = project?.timeZone ?? "";
    const budgets = await Promise.all(rules.filter((r) => countsKey(r, key)).map((r) => measureBudget(deps.counters, r, timeZone, at)));
    return create(BudgetStatusSchema, { projectId: key.accountId, budgets, measuredAt: timestampFromMs(at) });
  };

  return (key) => {
    const at = now();
    const cached = cache.get(key.id);
    if (cached && at - cached.at < deps.cacheMs) return cached.status;
    // Forget what expired, so keys that stopped asking do not accumulate.
    if (cache.size > 1000) for (const [id, entry] of cache) if (at - entry.at >= deps.cacheMs) cache.delete(id);
    const entry = { at, status: measure(key, at) };
    cache.set(key.id, entry);
    // A failed measurement is not reused.
    entry.status.catch(() => cache.get(key.id) === entry && cache.delete(key.id));
    return entry.status;
  };
}
