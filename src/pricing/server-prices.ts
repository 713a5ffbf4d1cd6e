import { PriceCheck } from "../../gen/calltrace/v1/trace_pb.js";
// The one implementation of the shared table's resolution rule and cost formula, the TypeScript
// SDK's own: the service prices a call exactly as the SDK does (sdk/pricing/README.md), so a
// MISMATCH means different prices or counts, never a different rule (D30). The package build
// compiles that file and the table into dist/sdk/ with the rest (tsconfig.build.json).
import { PriceTable, type TokenUsage } from "../../sdk/typescript/src/price-table.js";

export { billedServiceTier } from "../../sdk/typescript/src/price-table.js";

/** A call's provider, model and usage (the parts of its counts as in the Trace message). */
export interface PricedUsage extends TokenUsage {
  provider: string;
  model: string;
}

// The bundled, dated table; resolution is memoised inside it, so pricing a model name that was
// seen before is one map lookup and the formula.
const table = new PriceTable();

/** The server's price of a call in USD, or undefined when the table does not know the model. */
export function serverCost(usage: PricedUsage): number | undefined {
  return table.cost(usage.provider, usage.model, usage) ?? undefined;
}

/** Whether the table prices this provider's model name. */
export function isPriced(provider: string, model: string): boolean {
  return catalogModel(provider, model) !== undefined;
}

/** The table's entry a provider's model name resolves to, or undefined. */
export function catalogModel(provider: string, model: string): string | undefined {
  return table.resolve(provider, model) ?? undefined;
}

/** How far a client's cost may be from the server's price and still match: 1 % of the server's price. */
const tolerance = 0.01;

/** How a client's cost compares with the server's price (undefined: the model is unpriced). */
export function priceCheck(clientCostUsd: number, serverCostUsd: number | undefined): PriceCheck {
  if (serverCostUsd === undefined) return PriceCheck.UNPRICED;
  return Math.abs(clientCostUsd - serverCostUsd) <= serverCostUsd * tolerance ? PriceCheck.MATCH : PriceCheck.MISMATCH;
}
