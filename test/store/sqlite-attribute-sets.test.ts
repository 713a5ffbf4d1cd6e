import Database from "better-sqlite3";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { beforeAll, describe, expect, it } from "vitest";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import type { StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import type { ImportItem } from "../../src/import/import-item.js";
import { importTraces } from "../../src/import/trace-import.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { metadataSet, setNumbering, tagSet, type AttributeSet } from "../../src/store/sqlite/sqlite-attribute-sets.js";
import type { GroupDimension } from "../../src/store/group-dimension.js";
import type { Store } from "../../src/store/store.js";
import { rollBackBefore, rounded, storeAll, tableRows, withUpgradedStore } from "../support/rollup-checks.js";
import { call } from "../support/stored-call.js";
import { tempDir } from "../support/temp-dir.js";

/**
 * Attribute sets (D83 tags, D86 metadata): a trace's tags, and its metadata, as the number of its
 * project's set of each, which the user index covers. A group-by of tags, of metadata keys or of a
 * metadata key's values over sets (ATTRIBUTE_SETS_READ) answers what one over each call's JSON
 * does, over numbered calls, calls without a number (stored before the migration, or past the
 * bound of sets) and calls without the attribute, with values counted as other (D54).
 */
const day = 86_400_000;
const hour = 3_600_000;
const now = Date.now();
/** Three values a day tracked: a day's later values count as other. */
const groupValuesPerDay = 3;
/** Sets numbered per project in the bounded store: the later ones are stored without a number. */
const setsPerProject = 4;

/** A kind of set: its table, a call's attribute of it (a set of eight, or once a single-use one), and the reads of the Attribution page over it. */
interface Kind {
  set: AttributeSet;
  attribute: (n: number) => Partial<StoredTrace>;
  groups: GroupDimension[];
  /** A filter on the attribute itself, and values whose days are read. */
  filter: { tags?: string[]; metadata?: Record<string, string> };
  dayValues: string[];
}

const tagSets = [[], ["a"], ["b"], ["a", "b"], ["b", "b"], ["c", "a"], ["d"], ["b", "e", "a"]];
const metadataSets: Record<string, string>[] = [
  {},
  { feature: "a" },
  { feature: "b" },
  { feature: "a", team: "x" },
  { team: "x" },
  { feature: "c", team: "y" },
  { feature: "d" },
  { team: "y", feature: "b", plan: "e" },
];
const kinds: Record<string, Kind> = {
  tags: {
    set: tagSet,
    attribute: (n) => ({ tags: n % 17 === 0 ? [`once-${n}`] : tagSets[(n * 7) % tagSets.length]! }),
    groups: [{ kind: "tag" }],
    filter: { tags: ["a"] },
    dayValues: ["a", "b", "", "once-17"],
  },
  metadata: {
    set: metadataSet,
    attribute: (n) => ({ metadata: n % 17 === 0 ? { feature: `once-${n}` } : metadataSets[(n * 7) % metadataSets.length]! }),
    groups: [{ kind: "metadataKey" }, { kind: "metadata", key: "feature" }],
    filter: { metadata: { team: "x" } },
    dayValues: ["a", "b", "", "once-17", "feature", "team"],
  },
};

/** Four days of calls of three users (and none), with repeated and single-use sets of both kinds, in two projects. */
const traces: StoredTrace[] = Array.from({ length: 260 }, (_, n) =>
  call({
    accountId: n % 13 === 0 ? "acc_b" : "acc_a",
    at: n < 220 ? now - 4 * day + Math.floor((n * 4 * day) / 220) : now - 3 * hour + n * 1000,
    ...(n % 5 === 4 ? {} : { userId: `user-${n % 3}` }),
    ...kinds.tags!.attribute(n),
    // Not in step with the tags: sets of both kinds on one call, or of one.
    ...kinds.metadata!.attribute(n * 3 + 1),
    keyId: ["key_a", "key_b"][n % 2]!,
    status: n % 6 === 0 ? "error" : "success",
    latencyMs: 30 + ((n * 53) % 900),
    // Binary fractions: sums in any order are exact, so ties of cost rank the same on both paths.
    costUsd: (n % 9) / 1024,
  }),
);

/** Every read of the Attribution page over `kind`, over ranges with whole and partial days, under a user, a status, a key and the attribute. */
async function attributeReads(store: Store, kind: Kind): Promise<unknown[]> {
  const answers: unknown[] = [];
  for (const since of [now - 30 * day, now - 2 * day - 5 * hour, now - 5 * hour]) {
    for (const f of [{}, { userId: "user-1" }, { userId: "user-0", status: "error" }, { keyId: "key_b" }, { userId: "user-2", ...kind.filter }]) {
      const filter = create(TraceFilterSchema, { since: timestampFromMs(since), ...f });
      for (const group of kind.groups) {
        for (const limit of [2, 50]) answers.push({ since, f, group, limit, top: await store.usageByGroup("acc_a", filter, group, limit) });
        answers.push({ since, f, group, days: await store.usageByGroupAndDay("acc_a", filter, group, kind.dayValues, true) });
      }
    }
  }
  return answers;
}

/** The answers of `attributeReads` on the store in `dir`, over sets or each call's JSON. */
async function readsOf(dir: string, kind: Kind, attributeSetsRead: boolean): Promise<unknown[]> {
  const store = openSqliteStore(dir, { groupValuesPerDay, attributeSetsRead });
  try {
    return rounded(await attributeReads(store, kind)) as unknown[];
  } finally {
    await store.close();
  }
}

/** A group of an answer: a value, or other. */
type Group = { value: string; other: boolean };

/** How many of the project's calls have no such attribute (0), a set's number, and none (NULL). */
const numbering = (dir: string, set: AttributeSet, account = "acc_a") =>
  tableRows(
    dir,
    `SELECT SUM(${set.num} = 0) AS none, SUM(${set.num} > 0) AS numbered, SUM(${set.num} IS NULL) AS unnumbered FROM traces
     WHERE project_num = (SELECT num FROM id_numbers WHERE id = '${account}')`,
  )[0] as { none: number; numbered: number; unnumbered: number };

const setsOf = (dir: string, set: AttributeSet) =>
  tableRows(dir, `SELECT id AS project, COUNT(*) AS sets FROM ${set.table} JOIN id_numbers ON id_numbers.num = project_num GROUP BY id ORDER BY id`);

/** Sets rows' set numbers to NULL, as the traces a store held before the migration are. */
function unnumber(dir: string, set: AttributeSet, where: string): number {
  const db = new Database(join(dir, "calltrace.db"));
  try {
    return db.prepare(`UPDATE traces SET ${set.num} = NULL WHERE ${where}`).run().changes;
  } finally {
    db.close();
  }
}

/** A call's attribute of `kind` as the store keeps it (JSON text), or null for none. */
const attributeJson = (trace: StoredTrace, kind: Kind) => {
  const value = kind.set === tagSet ? trace.tags : trace.metadata;
  return Object.keys(value).length === 0 ? null : JSON.stringify(value);
};

describe("embedded store: numbered tag and metadata sets (D83, D86)", () => {
  const unbounded = tempDir();
  const bounded = tempDir();
  beforeAll(async () => {
    for (const [dir, options] of [
      [unbounded, {}],
      [bounded, { attributeSets: { setsPerProject } }],
    ] as const) {
      const store = openSqliteStore(dir, { groupValuesPerDay, ...options });
      // In batches, so later batches meet sets numbered by earlier ones.
      for (let i = 0; i < traces.length; i += 50) await storeAll(store, traces.slice(i, i + 50));
      await store.close();
    }
  });

  describe.each(Object.entries(kinds))("%s", (_name, kind) => {
    it("numbers each project's distinct values, no number for a call without any", () => {
      const distinct = (account: string) =>
        new Set(traces.filter((t) => t.accountId === account).map((t) => attributeJson(t, kind)).filter((json) => json !== null)).size;
      expect(setsOf(unbounded, kind.set)).toEqual([
        { project: "acc_a", sets: distinct("acc_a") },
        { project: "acc_b", sets: distinct("acc_b") },
      ]);
      const none = traces.filter((t) => t.accountId === "acc_a" && attributeJson(t, kind) === null).length;
      expect(none).toBeGreaterThan(0);
      expect(numbering(unbounded, kind.set)).toEqual({
        none,
        numbered: traces.filter((t) => t.accountId === "acc_a").length - none,
        unnumbered: 0,
      });
    });

    it("numbers at most the bound of sets per project: later sets are stored without a number, and answer the same", async () => {
      expect(setsOf(bounded, kind.set)).toEqual([
        { project: "acc_a", sets: setsPerProject },
        { project: "acc_b", sets: setsPerProject },
      ]);
      const { numbered, unnumbered } = numbering(bounded, kind.set);
      expect(numbered).toBeGreaterThan(0);
      expect(unnumbered).toBeGreaterThan(0);
      // A set numbered before the bound keeps its number when it comes again past it.
      const [repeated] = tableRows(
        bounded,
        `SELECT COUNT(*) AS calls FROM traces WHERE seq > (SELECT MIN(seq) FROM traces WHERE ${kind.set.num} IS NULL) AND ${kind.set.num} > 0`,
      ) as { calls: number }[];
      expect(repeated!.calls).toBeGreaterThan(0);
      expect(await readsOf(bounded, kind, true)).toEqual(await readsOf(unbounded, kind, true));
    });

    it("counts the bound again after a numbering that rolled back: its sets were counted, not stored", async () => {
      const dir = tempDir();
      await openSqliteStore(dir).close();
      const db = new Database(join(dir, "calltrace.db"));
      const json = (value: string) => (kind.set === tagSet ? `["${value}"]` : `{"k":"${value}"}`);
      try {
        const sets = setNumbering(db, kind.set, 3);
        sets.number([[1, json("a")]]);
        // A numbering that fails after its first new set: the transaction takes both back.
        db.exec(
          `CREATE TRIGGER refuse BEFORE INSERT ON ${kind.set.table} WHEN NEW.${kind.set.json} = jsonb('${json("boom")}') BEGIN SELECT RAISE(ABORT, 'refused'); END`,
        );
        expect(() =>
          sets.number([
            [1, json("b")],
            [1, json("boom")],
          ]),
        ).toThrow("refused");
        db.exec("DROP TRIGGER refuse");
        expect(db.prepare(`SELECT COUNT(*) FROM ${kind.set.table}`).pluck().get()).toBe(1);
        expect(sets.numberOf(1, json("b"))).toBeUndefined();
        // One set stored, so two more fit under the bound of three, and no third.
        sets.number([
          [1, json("c")],
          [1, json("d")],
          [1, json("e")],
        ]);
        expect([sets.numberOf(1, json("c")), sets.numberOf(1, json("d"))].every((num) => num !== undefined && num > 0)).toBe(true);
        expect(sets.numberOf(1, json("e"))).toBeUndefined();
      } finally {
        db.close();
      }
    });

    it("answers every read as grouping each call's JSON does, over numbered, unnumbered and attribute-less calls, with other", async () => {
      // Calls as a store held them before the migration: no number.
      expect(unnumber(bounded, kind.set, `seq % 5 = 0 AND ${kind.set.num} > 0`)).toBeGreaterThan(0);
      const overJson = await readsOf(bounded, kind, false);
      // The cases the read must get right are in the answers: other, the group without a value, values of several sets.
      const groups = overJson.flatMap((a) => {
        const { top, days } = a as { top?: { groups: Group[] }; days?: Group[] };
        return top ? top.groups : days!;
      });
      expect(groups.some((g) => g.other)).toBe(true);
      expect(groups.some((g) => g.value === "" && !g.other)).toBe(true);
      expect(new Set(groups.filter((g) => g.value !== "").map((g) => g.value)).size).toBeGreaterThanOrEqual(3);
      expect(await readsOf(bounded, kind, true)).toEqual(overJson);
      expect(await readsOf(unbounded, kind, true)).toEqual(overJson);
    });

    it("upgrades a store written before it: its calls are read from their JSON, new calls are numbered, and the answers are the writer's", async () => {
      const [older, newer] = [traces.slice(0, 200), traces.slice(200)];
      await withUpgradedStore(
        (dir) => openSqliteStore(dir, { groupValuesPerDay }),
        older,
        (dir) => rollBackBefore(dir, kind.set.table, []),
        async ({ upgraded, upgradedDir, written, writtenDir }) => {
          expect(numbering(upgradedDir, kind.set).unnumbered).toBe(older.filter((t) => t.accountId === "acc_a").length);
          await storeAll(upgraded, newer);
          await storeAll(written, newer);
          expect(numbering(upgradedDir, kind.set).numbered).toBeGreaterThan(0);
          expect(rounded(await attributeReads(upgraded, kind))).toEqual(rounded(await attributeReads(written, kind)));
          expect(numbering(writtenDir, kind.set).unnumbered).toBe(0);
        },
      );
    });
  });

  it("numbers the sets of imported traces (traces import's path)", async () => {
    const dir = tempDir();
    const store = openSqliteStore(dir, { groupValuesPerDay });
    try {
      async function* items(): AsyncGenerator<ImportItem> {
        for (const [i, trace] of traces.entries())
          yield { where: `line ${i + 1}`, write: { trace, idempotencyKey: undefined, importKey: `id:${i}` } };
      }
      const counts = await importTraces(items(), store, (r) => {
        throw new Error(`${r.where}: ${r.reason}`);
      });
      expect(counts.stored).toBe(traces.length);
      for (const { set } of Object.values(kinds)) {
        expect(numbering(dir, set).unnumbered).toBe(0);
        expect(setsOf(dir, set)).toEqual(setsOf(unbounded, set));
      }
    } finally {
      await store.close();
    }
  });
});
