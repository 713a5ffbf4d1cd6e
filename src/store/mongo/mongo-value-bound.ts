import { MongoBulkWriteError, MongoServerError } from "mongodb";
import { attributeGroups, cappedGroups } from "../trace-groups.js";
import { otherValue } from "../value-cap.js";
import type { GroupValueDoc, MongoCollections } from "./mongo-collections.js";
import { metadataPair, type CappedGroups, type TraceDoc } from "./mongo-trace-doc.js";

const dayMs = 86_400_000;
/** Scopes held in memory; those read longest ago are dropped, and read again when met. */
const maxScopes = 4096;
/** Rounds of claims refused because another instance claimed the same slots first, before the batch fails. */
const maxRounds = 20;

/** The key of one scope (a project's values of one dimension on one UTC day): unambiguous whatever a metadata key holds. */
const scopeKey = (accountId: string, day: number, dimension: string) => JSON.stringify([accountId, day, dimension]);

/**
 * The value bound of D54 on MongoDB, shared by every instance on one database. A scope's tracked
 * values are slots 0..N-1 of `group_values`, each a document whose _id is the scope and slot
 * number: claiming a value inserts the next free slot, and the unique _id decides between
 * instances (FerretDB has no transactions, and its $inc is not atomic). Slots are claimed in
 * order by ordered inserts, so they stay dense and a day tracks exactly the first N values
 * claimed, never more. A refused claim re-reads its scopes and tries the batch's groups again.
 * Each trace document is marked with where it counts under other (TraceDoc.capped), which the
 * group-bys read; the traces themselves keep every value.
 */
export function mongoValueBound(c: MongoCollections, limit: number, timeoutMs: number): (docs: TraceDoc[]) => Promise<void> {
  /** Per scope, its tracked values and their slots, as last read or claimed here. */
  const scopes = new Map<string, Map<string, number>>();

  const read = async (keys: string[]) => {
    const found = new Map(keys.map((k) => [k, new Map<string, number>()]));
    for (const doc of await c.groupValues.find({ scope: { $in: keys } }, { timeoutMS: timeoutMs }).toArray()) {
      found.get(doc.scope)?.set(doc.value, doc.slot);
    }
    for (const [k, values] of found) {
      scopes.delete(k);
      scopes.set(k, values);
    }
    for (const oldest of scopes.keys()) {
      if (scopes.size <= Math.max(maxScopes, keys.length)) break;
      scopes.delete(oldest);
    }
  };

  // One batch at a time per process (the writer hands over several): batches of one process
  // would otherwise claim the same slots and refuse each other.
  let queue: Promise<unknown> = Promise.resolve();
  return (docs) => {
    if (limit === 0 || docs.length === 0) return Promise.resolve();
    const run = queue.then(() => mark(docs));
    queue = run.catch(() => {});
    return run;
  };

  async function mark(docs: TraceDoc[]): Promise<void> {
    const traces = docs.map((doc) => ({
      doc,
      accountId: doc.meta.accountId,
      day: Math.floor(doc.receivedAt.getTime() / dayMs),
      groups: attributeGroups({
        serviceName: doc.serviceName,
        userId: doc.userId,
        sessionId: doc.sessionId,
        environment: doc.environment,
        tags: doc.tags ?? [],
        metadata: (doc.metadata ?? []).map(({ k, v }) => [k, v] as const),
      }),
    }));
    for (let round = 1; ; round++) {
      const needed = new Set<string>();
      for (const t of traces) for (const [dimension, value] of t.groups) if (value !== "") needed.add(scopeKey(t.accountId, t.day, dimension));
      const unknown = [...needed].filter((k) => !scopes.has(k));
      if (unknown.length > 0) await read(unknown);

      const claims: GroupValueDoc[] = [];
      const claimed = new Map<string, Map<string, number>>();
      const kept = (accountId: string, day: number) => (dimension: string, value: string) => {
        if (value === "" || value === otherValue) return value;
        const key = scopeKey(accountId, day, dimension);
        const tracked = scopes.get(key) ?? new Map<string, number>();
        const mine = claimed.get(key);
        if (tracked.has(value) || mine?.has(value)) return value;
        const slot = tracked.size + (mine?.size ?? 0);
        if (slot >= limit) return otherValue;
        if (mine) mine.set(value, slot);
        else claimed.set(key, new Map([[value, slot]]));
        claims.push({ _id: `${key}${slot}`, scope: key, slot, value, accountId, day: new Date(day * dayMs) });
        return value;
      };
      const marks = traces.map((t) => cappedMarks(t.groups, cappedGroups(t.groups, kept(t.accountId, t.day))));
      if (claims.length > 0) {
        try {
          await c.groupValues.insertMany(claims, { ordered: true, timeoutMS: timeoutMs });
        } catch (error) {
          // Another instance took a slot first: its scopes are read again, and the groups counted again.
          if (!isDuplicateKey(error) || round >= maxRounds) throw error;
          for (const key of claimed.keys()) scopes.delete(key);
          continue;
        }
        for (const [key, mine] of claimed) {
          const tracked = scopes.get(key) ?? new Map<string, number>();
          for (const [value, slot] of mine) tracked.set(value, slot);
          scopes.set(key, tracked);
        }
      }
      traces.forEach((t, i) => {
        if (marks[i]) t.doc.capped = marks[i];
        else delete t.doc.capped;
      });
      return;
    }
  }
}

function isDuplicateKey(error: unknown): boolean {
  if (error instanceof MongoBulkWriteError) return [error.writeErrors].flat().some((e) => e.code === 11000);
  return error instanceof MongoServerError && error.code === 11000;
}

/** What a document records of the groups a trace counts in (`counted`, from `groups`); undefined when every value counts as itself. */
export function cappedMarks(groups: [string, string][], counted: [string, string][]): CappedGroups | undefined {
  if (!counted.some(([, value]) => value === otherValue)) return undefined;
  const other = new Set(counted.filter(([, value]) => value === otherValue).map(([dimension]) => dimension));
  const own = (dimension: string) => counted.filter(([d, v]) => d === dimension && v !== otherValue && v !== "").map(([, v]) => v);
  const marks: CappedGroups = {};
  for (const dimension of ["user", "session", "environment", "service"] as const) if (other.has(dimension)) marks[dimension] = true;
  if (other.has("tag")) marks.tags = own("tag");
  const keys = groups.filter(([d, v]) => d === "metadataKey" && v !== "").map(([, v]) => v);
  const keptKeys = new Set(own("metadataKey"));
  if (other.has("metadataKey")) {
    marks.keys = [...keptKeys];
    marks.dropped = keys.filter((k) => !keptKeys.has(k));
  }
  const otherValues = keys.filter((k) => keptKeys.has(k) && other.has(`m:${k}`));
  if (otherValues.length > 0) marks.otherValues = otherValues;
  if ((marks.dropped?.length ?? 0) > 0 || otherValues.length > 0) {
    marks.pairs = counted.filter(([d, v]) => d.startsWith("m:") && v !== otherValue).map(([d, v]) => metadataPair(d.slice(2), v));
  }
  return marks;
}
