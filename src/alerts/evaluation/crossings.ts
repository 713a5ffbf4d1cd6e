/**
 * When a measured value crosses a rule's thresholds: which notices to send, and the state that
 * makes each fire once. Pure: the evaluator reads the state, calls these, enqueues the notices
 * (idempotent by id) and writes the state back. Ids are deterministic (rule, window, threshold,
 * and for moving windows an occurrence counter), so two evaluators or a restart between enqueue
 * and state write can never send one crossing under two ids.
 */

/** A notice to send: a threshold crossed, or (moving windows) back under it. */
export interface Crossing {
  id: string;
  thresholdPercent: number;
  /** The threshold in the limit's unit. */
  thresholdValue: number;
  resolved: boolean;
}

/** What a level rule remembers between evaluations. */
export interface LevelState {
  /** Calendar windows: the window the fired thresholds belong to (its start, ms). */
  windowStartMs?: number;
  /** Calendar windows: thresholds fired in that window. */
  fired?: number[];
  /** Moving windows: per threshold, how many times it was crossed, and whether it is above now. */
  occurrences?: Record<string, number>;
  above?: number[];
}

export interface LevelInput {
  ruleId: string;
  value: number;
  /** 100 %: the budget, error rate, p95 or quota. */
  limit: number;
  thresholdsPercent: readonly number[];
  /** True: a threshold counts once `value` exceeds it (errors, latency); false: once it reaches it (spend, quota). */
  strictly: boolean;
  /** False when the value does not count yet (errors below their fewest calls): nothing crosses, and nothing goes back under. */
  counts?: boolean;
}

const crossed = (input: LevelInput, percent: number) => {
  const at = (input.limit * percent) / 100;
  return input.counts !== false && (input.strictly ? input.value > at : input.value >= at);
};

/**
 * A calendar window's crossings (spend per day, week or month; quota per month): each threshold
 * at most once per window, never "back under" (a calendar window's spend only grows).
 */
export function calendarCrossings(
  input: LevelInput,
  windowStartMs: number,
  state: LevelState,
): { crossings: Crossing[]; state: LevelState } {
  const fired = state.windowStartMs === windowStartMs ? new Set(state.fired ?? []) : new Set<number>();
  const crossings: Crossing[] = [];
  for (const percent of input.thresholdsPercent) {
    if (fired.has(percent) || !crossed(input, percent)) continue;
    fired.add(percent);
    crossings.push({
      id: `${input.ruleId}.${windowStartMs}.${percent}`,
      thresholdPercent: percent,
      thresholdValue: (input.limit * percent) / 100,
      resolved: false,
    });
  }
  return { crossings, state: { windowStartMs, fired: [...fired].sort((a, b) => a - b) } };
}

/**
 * A moving window's crossings (rolling spend, errors, latency): a threshold fires when the value
 * goes above it and again only after it went back under, which sends a "back under" notice.
 */
export function movingCrossings(input: LevelInput, state: LevelState): { crossings: Crossing[]; state: LevelState } {
  const occurrences = { ...(state.occurrences ?? {}) };
  const above = new Set(state.above ?? []);
  const crossings: Crossing[] = [];
  for (const percent of input.thresholdsPercent) {
    const thresholdValue = (input.limit * percent) / 100;
    const isAbove = crossed(input, percent);
    if (isAbove && !above.has(percent)) {
      const occurrence = (occurrences[percent] ?? 0) + 1;
      occurrences[percent] = occurrence;
      above.add(percent);
      crossings.push({ id: `${input.ruleId}.r${percent}.${occurrence}`, thresholdPercent: percent, thresholdValue, resolved: false });
    } else if (!isAbove && above.has(percent) && input.counts !== false) {
      above.delete(percent);
      crossings.push({
        id: `${input.ruleId}.r${percent}.${occurrences[percent] ?? 0}.under`,
        thresholdPercent: percent,
        thresholdValue,
        resolved: true,
      });
    }
  }
  return { crossings, state: { occurrences, above: [...above].sort((a, b) => a - b) } };
}

/** Unpriced calls: one notice per model per UTC day. */
export function unpricedCrossings(
  ruleId: string,
  day: string,
  models: readonly string[],
  state: { day?: string; models?: string[] },
): { crossings: (Crossing & { model: string })[]; state: { day: string; models: string[] } } {
  const seen = new Set(state.day === day ? (state.models ?? []) : []);
  const crossings = models
    .filter((model) => !seen.has(model))
    .map((model) => ({ id: `${ruleId}.${day}.${model}`, model, thresholdPercent: 100, thresholdValue: 1, resolved: false }));
  for (const c of crossings) seen.add(c.model);
  return { crossings, state: { day, models: [...seen].sort() } };
}
