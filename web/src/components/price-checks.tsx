import type { UsageTotals } from "../../../gen/calltrace/v1/query_pb.js";
import { plural } from "../format.js";

/**
 * How many calls of the period the server could not price (its table does not know the model) or
 * priced more than 1 % away from the client's cost. Either means the spend shown may be wrong;
 * `calltrace prices check` lists the unknown models.
 */
export function PriceChecks({ totals }: { totals: UsageTotals }) {
  const { unpricedCalls: unpriced, mismatchedCalls: mismatched } = totals;
  const clean = unpriced === 0n && mismatched === 0n;
  return (
    <p class={`price-checks small ${clean ? "muted" : "warn"}`} data-price-checks>
      <span title="Calls whose model the server's price table does not know">
        <strong data-unpriced>{plural(unpriced, "unpriced call")}</strong>
      </span>
      {" · "}
      <span title="Calls whose cost from the client differs from the server's price by more than 1 %">
        <strong data-mismatched>{plural(mismatched, "call")}</strong> priced differently by the server (over 1 %)
      </span>
    </p>
  );
}
