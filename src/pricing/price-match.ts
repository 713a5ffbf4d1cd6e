import { RE2JS } from "re2js";
import type { CustomPriceRecord, PriceMatchKind } from "../store/price-store.js";

/** The longest pattern a custom price may have. */
export const maxPatternLength = 256;

/**
 * A regular expression in RE2's syntax, compiled by RE2JS: matching is linear in the name's
 * length whatever the pattern, so no pattern can make the hot path backtrack (no backreferences
 * or lookaround: RE2 refuses them at compile time, with its reason). Case-insensitive, matching
 * anywhere in the name unless anchored with ^ and $.
 */
export function compileModelPattern(pattern: string): RE2JS {
  return RE2JS.compile(pattern, RE2JS.CASE_INSENSITIVE);
}

/** Why a pattern cannot be used, or undefined when it can. */
export function patternProblem(matchKind: PriceMatchKind, pattern: string): string | undefined {
  if (pattern.trim() === "") return "must not be empty";
  if (pattern.length > maxPatternLength) return `must be at most ${maxPatternLength} characters`;
  if (matchKind !== "regex") return undefined;
  try {
    compileModelPattern(pattern);
    return undefined;
  } catch (error) {
    return `is not a valid RE2 regular expression: ${(error as Error).message}`;
  }
}

const rank: Record<PriceMatchKind, number> = { exact: 0, prefix: 1, regex: 2 };

interface Candidate {
  price: CustomPriceRecord;
  matches: (model: string) => boolean;
}

// Names repeat: which prices match a provider's model is memoised, bounded like the catalog's.
const memoLimit = 1024;

/**
 * A project's custom prices, answering which one applies to a call. Precedence (D-number in
 * docs/decisions.md): exact beats prefix beats regex; among those, the newest effective-from
 * (none is oldest), then the newest created. Exact and prefix compare trimmed, lower-cased names.
 */
export class PriceBook {
  readonly size: number;
  readonly #candidates: Candidate[];
  readonly #matching = new Map<string, CustomPriceRecord[]>();

  constructor(prices: readonly CustomPriceRecord[]) {
    this.size = prices.length;
    this.#candidates = [...prices]
      .sort(
        (a, b) =>
          rank[a.matchKind] - rank[b.matchKind] ||
          (b.effectiveFrom?.getTime() ?? -Infinity) - (a.effectiveFrom?.getTime() ?? -Infinity) ||
          b.createdAt.getTime() - a.createdAt.getTime() ||
          (a.id < b.id ? -1 : 1),
      )
      .map((price) => ({ price, matches: matcher(price) }));
  }

  /** The price that applies to this provider's model for a call received at `at`, or undefined. */
  find(provider: string, model: string, at: Date): CustomPriceRecord | undefined {
    if (this.size === 0) return undefined;
    const memoKey = `${provider}\u0000${model}`;
    let matching = this.#matching.get(memoKey);
    if (!matching) {
      if (this.#matching.size >= memoLimit) this.#matching.clear();
      matching = this.#candidates.filter((c) => c.price.provider === provider && c.matches(model)).map((c) => c.price);
      this.#matching.set(memoKey, matching);
    }
    const t = at.getTime();
    return matching.find((p) => (p.effectiveFrom === undefined || p.effectiveFrom.getTime() <= t) && (p.effectiveUntil === undefined || t < p.effectiveUntil.getTime()));
  }
}

function matcher({ matchKind, pattern }: CustomPriceRecord): (model: string) => boolean {
  const wanted = pattern.trim().toLowerCase();
  switch (matchKind) {
    case "exact":
      return (model) => model.trim().toLowerCase() === wanted;
    case "prefix":
      return (model) => model.trim().toLowerCase().startsWith(wanted);
    case "regex": {
      const re = compileModelPattern(pattern);
      return (model) => re.matcher(model).find();
    }
  }
}
