import { parseCommandArgs, resolveConfig } from "../config/config.js";
import { isPriced } from "../pricing/server-prices.js";
import { openStore } from "../store/open-store.js";
import type { ModelCalls } from "../store/trace-store.js";
import { UsageError } from "./usage-error.js";

const dayMs = 86_400_000;

/**
 * `calltrace prices check`: the models the configured store saw in the last days (30 unless
 * --days) that the server's price table does not know, most calls first. Their traces are stored
 * PRICE_CHECK_UNPRICED; this is the list of prices to add to sdk/pricing/models.json.
 */
export async function pricesCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandArgs(argv, {
    days: { type: "string" },
    json: { type: "boolean" },
  });
  if (positionals[0] !== "check" || positionals.length > 1) throw new UsageError("prices needs: check");
  const days = Number(values.days ?? 30);
  if (!Number.isInteger(days) || days < 1 || days > 3660)
    throw new UsageError(`--days must be a whole number of days from 1 to 3660, got ${JSON.stringify(values.days)}`);
  const store = await openStore(resolveConfig(values));
  let unknown: ModelCalls[];
  try {
    const seen = await store.modelCalls(new Date(Date.now() - days * dayMs));
    unknown = seen
      .filter((m) => !isPriced(m.provider, m.model))
      .sort((a, b) => b.calls - a.calls || (a.provider + a.model < b.provider + b.model ? -1 : 1));
  } finally {
    await store.close();
  }
  if (values.json) {
    console.log(JSON.stringify(unknown));
  } else if (unknown.length === 0) {
    console.log(`every model seen in the last ${days} days is in the price table`);
  } else {
    const width = Math.max(...unknown.map((m) => m.provider.length + 1 + m.model.length), "model".length);
    console.log(`${"model".padEnd(width)}  calls (last ${days} days, not in the price table)`);
    for (const m of unknown) console.log(`${`${m.provider}/${m.model}`.padEnd(width)}  ${m.calls}`);
  }
}
