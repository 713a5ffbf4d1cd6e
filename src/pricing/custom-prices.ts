import { PriceCheck, TraceSource } from "../../gen/calltrace/v1/trace_pb.js";
import { type Price, PriceTable } from "../../sdk/typescript/src/price-table.js";
import type { FieldProblem } from "../ingest/trace-validation.js";
import { type CustomPriceInput, type CustomPriceRecord, priceMatchKinds, type RepricedTrace } from "../store/price-store.js";
import { patternProblem, type PriceBook } from "./price-match.js";
import { type PricedUsage, priceCheck, serverCost } from "./server-prices.js";

/** The most custom prices one project may keep: each is matched against every new model name. */
export const maxPricesPerProject = 200;

const providers = new Set(["openai", "anthropic", "gemini"]);

/** What is wrong with a custom price as given (empty: nothing). */
export function customPriceProblems(input: CustomPriceInput): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (!providers.has(input.provider)) problems.push({ field: "provider", problem: "must be openai, anthropic or gemini" });
  if (!priceMatchKinds.includes(input.matchKind)) problems.push({ field: "match", problem: "must be exact, prefix or regex" });
  else {
    const problem = patternProblem(input.matchKind, input.pattern);
    if (problem) problems.push({ field: "pattern", problem });
  }
  try {
    // The catalog's own checks: finite, non-negative rates, tiers with a positive threshold.
    new PriceTable({ openai: { custom: input.price } }, { schema: 3, models: {} });
  } catch (error) {
    problems.push({ field: "price", problem: (error as Error).message.replace(/^calltrace: price for openai\/custom /, "") });
  }
  const { effectiveFrom: from, effectiveUntil: until } = input;
  if (from && until && from.getTime() >= until.getTime()) problems.push({ field: "effective_until", problem: "must be after effective_from" });
  return problems;
}

// One table per price record, made on first use: the catalog's formula, applied to the custom rates.
const tables = new WeakMap<CustomPriceRecord, PriceTable>();

function customCost(price: CustomPriceRecord, usage: PricedUsage): number | undefined {
  let table = tables.get(price);
  if (!table) tables.set(price, (table = new PriceTable({ [price.provider]: { custom: price.price as Price } }, { schema: 3, models: {} })));
  return table.cost(price.provider, "custom", usage) ?? undefined;
}

/**
 * The server's price of a call received at `at`: the project's custom price that applies (even
 * when it lacks a rate the call needs: the call is then unpriced, never priced from the catalog
 * instead), else the catalog's.
 */
export function projectCost(book: PriceBook, usage: PricedUsage, at: Date): number | undefined {
  const custom = book.find(usage.provider, usage.model, at);
  return custom ? customCost(custom, usage) : serverCost(usage);
}

/**
 * What the server stores of its price: for a call the client priced (the API), its own price and
 * the check against the client's, which stays as sent; for an OTLP span, which carries no cost,
 * the server's price is the cost too. Ingest and re-pricing both go through here.
 */
export function serverPricing(source: TraceSource, clientCostUsd: number, serverCostUsd: number | undefined): RepricedTrace {
  if (source === TraceSource.OTLP) {
    return { costUsd: serverCostUsd ?? 0, serverCostUsd, priceCheck: serverCostUsd === undefined ? PriceCheck.UNPRICED : PriceCheck.SERVER };
  }
  return { costUsd: clientCostUsd, serverCostUsd, priceCheck: priceCheck(clientCostUsd, serverCostUsd) };
}
