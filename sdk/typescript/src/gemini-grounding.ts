import { dig } from "./read-json.js";

/**
 * Billed searches of Gemini's grounding with Google Search, from the
 * candidates' `groundingMetadata` (sdk/pricing/README.md, "Gemini grounding"):
 * Gemini 3 and later bill each search query (`webSearchQueries`), Gemini 2.x
 * each grounded prompt, so a grounded response of a 2.x model counts 1.
 * Undefined when the response carries no grounding.
 */
export function groundingSearches(model: string, response: unknown): number | undefined {
  const candidates = dig(response, "candidates");
  if (!Array.isArray(candidates)) return undefined;
  const grounding = candidates.map((c) => dig(c, "groundingMetadata")).filter((g) => g !== undefined && g !== null);
  const queries = grounding.map((g) => listLength(dig(g, "webSearchQueries")));
  const grounded = grounding.some((g, i) => (queries[i] ?? 0) > 0 || listLength(dig(g, "groundingChunks")) > 0);
  if (!grounded) return undefined;
  return billsPerQuery(model) ? queries.reduce((a, b) => a + b, 0) : 1;
}

/**
 * A stream repeats or spreads grounding metadata over its last chunks: the
 * call's count is the largest any chunk gave, so it is counted once.
 */
export function groundingTally(): (model: string, response: unknown) => number | undefined {
  let most: number | undefined;
  return (model, response) => {
    const searches = groundingSearches(model, response);
    if (searches !== undefined) most = Math.max(most ?? 0, searches);
    return most;
  };
}

// "gemini-3-pro-preview", "models/gemini-3.1-flash-lite", "publishers/google/models/gemini-2.5-pro".
const GENERATION = /(?:^|\/)gemini-(\d+)/;

function billsPerQuery(model: string): boolean {
  const generation = GENERATION.exec(model);
  return generation !== null && Number(generation[1]) >= 3;
}

function listLength(list: unknown): number {
  return Array.isArray(list) ? list.length : 0;
}
