import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type AlertRule, type Budget, BudgetSchema } from "../../../gen/calltrace/v1/alert_pb.js";
import { quarterMs, type ScopeCounters } from "../../store/scope-counters.js";
import { scopeKey } from "../../store/scope-keys.js";
import { type WindowBounds, windowAt } from "./alert-window.js";

/**
 * A scope's spend in USD over a window, summed from its quarter-hour cells (the window's bounds
 * are quarter hours, alert-window.ts: its last cell is the one now falls in).
 */
export async function measureSpend(counters: ScopeCounters, projectId: string, scope: string, window: WindowBounds): Promise<number> {
  const cells = await counters.cells(projectId, scope, quarterMs, window.startMs, window.endMs);
  return cells.reduce((sum, cell) => sum + cell.costUsd, 0);
}

/** A spend rule's budget now: its window in the project's zone, spend and what remains. */
export async function measureBudget(counters: ScopeCounters, rule: AlertRule, timeZone: string, nowMs: number): Promise<Budget> {
  const window = windowAt(rule.window, nowMs, timeZone);
  const scope = scopeKey(rule.scope);
  await counters.watch(rule.projectId, [scope]);
  const spendUsd = await measureSpend(counters, rule.projectId, scope, window);
  return create(BudgetSchema, {
    ruleId: rule.id,
    name: rule.name,
    ...(rule.scope ? { scope: rule.scope } : {}),
    ...(rule.window ? { window: rule.window } : {}),
    windowStart: timestampFromMs(window.startMs),
    windowEnd: timestampFromMs(window.endMs),
    budgetUsd: rule.budgetUsd,
    spendUsd,
    remainingUsd: Math.max(0, rule.budgetUsd - spendUsd),
    exceeded: spendUsd >= rule.budgetUsd,
  });
}
