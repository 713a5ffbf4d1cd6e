import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { ErrorGroupSchema, ValueCountSchema, type ErrorGroup } from "../../gen/calltrace/v1/query_pb.js";
import { otherErrorGroup } from "./error-group.js";
import { otherValue } from "./value-cap.js";

/** Sums over the failed calls of one group (in one stretch of time, or one store's part). */
export interface ErrorGroupCell {
  group: string;
  calls: number;
  costUsd: number;
  firstMs: number;
  lastMs: number;
}

/** Calls of one group with one model, key or user. */
export interface ErrorValueCell {
  group: string;
  dimension: "model" | "key" | "user";
  value: string;
  calls: number;
}

/** What GetErrorGroups answers. */
export interface ErrorGroups {
  groups: ErrorGroup[];
  totalErrors: number;
  totalGroups: number;
}

/** How many models, keys and users a group lists (its counts say how many there were). */
const topValues = 5;

/**
 * The groups of an adapter's cells, most calls first: cells of the same group summed (whole days
 * from roll-ups, partial days from traces), shares of every failure in view, each group's top values.
 */
export async function foldErrorGroups(
  cells: ErrorGroupCell[],
  values: ErrorValueCell[],
  limit: number,
  messages: (groups: string[]) => Promise<Map<string, string>>,
): Promise<ErrorGroups> {
  const byGroup = new Map<string, ErrorGroupCell>();
  let totalErrors = 0;
  for (const cell of cells) {
    totalErrors += cell.calls;
    const into = byGroup.get(cell.group);
    if (!into) byGroup.set(cell.group, { ...cell });
    else {
      into.calls += cell.calls;
      into.costUsd += cell.costUsd;
      into.firstMs = Math.min(into.firstMs, cell.firstMs);
      into.lastMs = Math.max(into.lastMs, cell.lastMs);
    }
  }
  const ranked = [...byGroup.values()].filter((g) => g.calls > 0).sort((a, b) => b.calls - a.calls || (a.group < b.group ? -1 : 1));
  const top = ranked.slice(0, limit);
  const shown = new Set(top.map((g) => g.group));
  const counted = new Map<string, Map<string, number>>();
  for (const cell of values) {
    if (!shown.has(cell.group)) continue;
    const key = `${cell.group}\u0000${cell.dimension}`;
    let perValue = counted.get(key);
    if (!perValue) counted.set(key, (perValue = new Map()));
    perValue.set(cell.value, (perValue.get(cell.value) ?? 0) + cell.calls);
  }
  const listed = (group: string, dimension: ErrorValueCell["dimension"]) => {
    const all = [...(counted.get(`${group}\u0000${dimension}`) ?? new Map<string, number>())]
      .filter(([value, calls]) => value !== "" && calls > 0)
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    return {
      top: all
        .slice(0, topValues)
        .map(([value, calls]) => create(ValueCountSchema, { value: value === otherValue ? "other" : value, calls: BigInt(calls) })),
      count: BigInt(all.length),
    };
  };
  const text = await messages(top.map((g) => g.group).filter((g) => g !== otherValue));
  return {
    totalErrors,
    totalGroups: ranked.length,
    groups: top.map((g) => {
      const models = listed(g.group, "model");
      const keys = listed(g.group, "key");
      const users = listed(g.group, "user");
      return create(ErrorGroupSchema, {
        id: g.group === otherValue ? otherErrorGroup : g.group,
        message: g.group === otherValue ? "Other errors (past the day's cap of groups)" : (text.get(g.group) ?? ""),
        calls: BigInt(g.calls),
        share: totalErrors === 0 ? 0 : g.calls / totalErrors,
        costUsd: g.costUsd,
        firstSeen: timestampFromMs(g.firstMs),
        lastSeen: timestampFromMs(g.lastMs),
        models: models.top,
        modelCount: models.count,
        keys: keys.top,
        keyCount: keys.count,
        users: users.top,
        userCount: users.count,
      });
    }),
  };
}

/** The stored group of a filter's `error_group`: the API's `other` is the roll-ups' other value. */
export function storedErrorGroup(id: string): string {
  return id === otherErrorGroup ? otherValue : id;
}
