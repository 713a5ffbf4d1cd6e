import type { Budget, BudgetScope } from "./budget-status.js";

// Shared by every copy of this SDK in a process (its ESM and CommonJS builds
// hold separate classes), so `instanceof BudgetExceeded` holds whichever copy
// refused the call.
const BRAND = Symbol.for("calltrace.BudgetExceeded");

/**
 * Thrown (as a rejected promise) by a provider call that `enforceBudget`
 * refused: a spend budget that counts the call is used up. The provider was
 * not called.
 */
export class BudgetExceeded extends Error {
  /** The id of the spend rule whose budget is used up. */
  readonly ruleId: string;
  /** The rule's name. */
  readonly budgetName: string;
  /** Which calls the budget counts. */
  readonly scope: BudgetScope;
  /** Spend in USD in the budget's window, as last measured by the service. */
  readonly spendUsd: number;
  /** The budget in USD. */
  readonly budgetUsd: number;

  constructor(budget: Budget) {
    const scope = budget.scope.kind === "project" ? "the project" : describeScope(budget.scope);
    super(
      `calltrace: budget ${JSON.stringify(budget.name || budget.ruleId)} for ${scope} is exceeded ` +
        `($${budget.spendUsd} of $${budget.budgetUsd}); the provider was not called`,
    );
    this.name = "BudgetExceeded";
    this.ruleId = budget.ruleId;
    this.budgetName = budget.name;
    this.scope = budget.scope;
    this.spendUsd = budget.spendUsd;
    this.budgetUsd = budget.budgetUsd;
    Object.defineProperty(this, BRAND, { value: true });
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === "object" && value !== null && (value as { [BRAND]?: boolean })[BRAND] === true;
  }
}

function describeScope(scope: BudgetScope): string {
  const what = scope.kind === "metadata" ? `metadata.${scope.metadataKey}` : scope.kind;
  return `${what} ${JSON.stringify(scope.value)}`;
}
