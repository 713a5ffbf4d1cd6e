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
import { tagSetNumbering } from "../../src/store/sqlite/sqlite-tag-sets.js";
import type { Store } from "../../src/store/store.js";
import { rollBackBefore, rounded, storeAll, tableRows, withUpgradedStore } from "../support/rollup-checks.js";
import { call } from "../support/stored-call.js";
import { tempDir } from "../support/temp-dir.js";

/**
 * Tag sets (D83): a trace's tags as the number of its project's set, which the user index covers.
 * A group-by of tags over sets (TAG_SETS_READ) answers what one over each call's JSON does, over
 * numbered calls, calls without a number (stored before the migration, or past the bound of sets)
 * and calls without tags, with values counted as other (D54).
 */
const day = 86_400_000;
const hour = 3_600_000;
const now = Date.now();
/** Three values a day tracked: a day's later tags count as other. */
const groupValuesPerDay = 3;
/** Sets numbered per project in the bounded store: the later ones are stored without a number. */
const tagSetsPerProject = 4;

const tagSets = [[], ["a"], ["b"], ["a", "b"], ["b", "b"], ["c", "a"], ["d"], ["b", "e", "a"]];
/** Four days of calls of three users (and none), with repeated and single-use sets, in two projects. */
const traces: StoredTrace[] = Array.from({ length: 260 }, (_, n) =>
  call({
    accountId: n % 13 === 0 ? "acc_b" : "acc_a",
    at: n < 220 ? now - 4 * day + Math.floor((n * 4 * day) / 220) : now - 3 * hour + n * 1000,
    ...(n % 5 === 4 ? {} : { userId: `user-${n % 3}` }),
    tags: n % 17 === 0 ? [`once-${n}`] : tagSets[(n * 7) % tagSets.length]!,
    keyId: ["key_a", "key_b"][n % 2]!,
    status: n % 6 === 0 ? "error" : "success",
    latencyMs: 30 + ((n * 53) % 900),
    // Binary fractions: sums in any order are exact, so ties of cost rank the same on both paths.
    costUsd: (n % 9) / 1024,
  }),
);

/** Every tag read of the Attribution page, over ranges with whole and partial days, under a user, a status and a key. */
async function tagReads(store: Store): Promise<unknown[]> {
  const answers: unknown[] = [];
  for (const since of [now - 30 * day, now - 2 * day - 5 * hour, now - 5 * hour]) {
    for (const f of [
      {},
      { userId: "user-1" },
      { userId: "user-0", status: "error" },
      { keyId: "key_b" },
      { userId: "user-2", tags: ["a"] },
    ]) {
      const filter = create(TraceFilterSchema, { since: timestampFromMs(since), ...f });
      for (const limit of [2, 50])
        answers.push({ since, f, limit, top: await store.usageByGroup("acc_a", filter, { kind: "tag" }, limit) });
      answers.push({ since, f, days: await store.usageByGroupAndDay("acc_a", filter, { kind: "tag" }, ["a", "b", "", "once-17"], true) });
    }
  }
  return answers;
}

/** The answers of `tagReads` on the store in `dir`, over tag sets or each call's JSON. */
async function readsOf(dir: string, tagSetsRead: boolean): Promise<unknown[]> {
  const store = openSqliteStore(dir, { groupValuesPerDay, tagSetsRead });
  try {
    return rounded(await tagReads(store)) as unknown[];
  } finally {
    await store.close();
  }
}

/** A group of an answer: a tag, or other. */
type Group = { value: string; other: boolean };

/** How many of the project's calls have no tags (0), a set's number, and none (NULL). */
const numbering = (dir: string, account = "acc_a") =>
  tableRows(
    dir,
    `SELECT SUM(tags_num = 0) AS untagged, SUM(tags_num > 0) AS numbered, SUM(tags_num IS NULL) AS unnumbered FROM traces
     WHERE project_num = (SELECT num FROM id_numbers WHERE id = '${account}')`,
  )[0] as { untagged: number; numbered: number; unnumbered: number };

const setsOf = (dir: string) =>
  tableRows(
    dir,
    `SELECT id AS project, COUNT(*) AS sets FROM tag_sets JOIN id_numbers ON id_numbers.num = project_num GROUP BY id ORDER BY id`,
  );

/** Sets rows' tags_num to NULL, as the traces a store held before the migration are. */
function unnumber(dir: string, where: string): number {
  const db = new Database(join(dir, "calltrace.db"));
  try {
    return db.prepare(`UPDATE traces SET tags_num = NULL WHERE ${where}`).run().changes;
  } finally {
    db.close();
  }
}

describe("embedded store: a group-by of tags over numbered tag sets (D83)", () => {
  const unbounded = tempDir();
  const bounded = tempDir();
  beforeAll(async () => {
    for (const [dir, options] of [
      [unbounded, {}],
      [bounded, { tagSets: { tagSetsPerProject } }],
    ] as const) {
      const store = openSqliteStore(dir, { groupValuesPerDay, ...options });
      // In batches, so later batches meet sets numbered by earlier ones.
      for (let i = 0; i < traces.length; i += 50) await storeAll(store, traces.slice(i, i + 50));
      await store.close();
    }
  });

  it("numbers each project's distinct tags, no number for a call without tags", () => {
    const distinct = (account: string) =>
      new Set(traces.filter((t) => t.accountId === account && t.tags.length > 0).map((t) => JSON.stringify(t.tags))).size;
    expect(setsOf(unbounded)).toEqual([
      { project: "acc_a", sets: distinct("acc_a") },
      { project: "acc_b", sets: distinct("acc_b") },
    ]);
    const untagged = traces.filter((t) => t.accountId === "acc_a" && t.tags.length === 0).length;
    expect(untagged).toBeGreaterThan(0);
    expect(numbering(unbounded)).toEqual({
      untagged,
      numbered: traces.filter((t) => t.accountId === "acc_a").length - untagged,
      unnumbered: 0,
    });
  });

  it("numbers at most the bound of sets per project: later sets are stored without a number, and answer the same", async () => {
    expect(setsOf(bounded)).toEqual([
      { project: "acc_a", sets: tagSetsPerProject },
      { project: "acc_b", sets: tagSetsPerProject },
    ]);
    const { numbered, unnumbered } = numbering(bounded);
    expect(numbered).toBeGreaterThan(0);
    expect(unnumbered).toBeGreaterThan(0);
    // A set numbered before the bound keeps its number when it comes again past it.
    const [repeated] = tableRows(
      bounded,
      `SELECT COUNT(*) AS calls FROM traces WHERE seq > (SELECT MIN(seq) FROM traces WHERE tags_num IS NULL) AND tags_num > 0`,
    ) as { calls: number }[];
    expect(repeated!.calls).toBeGreaterThan(0);
    expect(await readsOf(bounded, true)).toEqual(await readsOf(unbounded, true));
  });

  it("counts the bound again after a numbering that rolled back: its sets were counted, not stored", async () => {
    const dir = tempDir();
    await openSqliteStore(dir).close();
    const db = new Database(join(dir, "calltrace.db"));
    try {
      const sets = tagSetNumbering(db, 3);
      sets.number([[1, '["a"]']]);
      // A numbering that fails after its first new set: the transaction takes both back.
      db.exec(
        `CREATE TRIGGER refuse BEFORE INSERT ON tag_sets WHEN NEW.tags = jsonb('["boom"]') BEGIN SELECT RAISE(ABORT, 'refused'); END`,
      );
      expect(() =>
        sets.number([
          [1, '["b"]'],
          [1, '["boom"]'],
        ]),
      ).toThrow("refused");
      db.exec("DROP TRIGGER refuse");
      expect(db.prepare("SELECT COUNT(*) FROM tag_sets").pluck().get()).toBe(1);
      expect(sets.numberOf(1, '["b"]')).toBeUndefined();
      // One set stored, so two more fit under the bound of three, and no third.
      sets.number([
        [1, '["c"]'],
        [1, '["d"]'],
        [1, '["e"]'],
      ]);
      expect([sets.numberOf(1, '["c"]'), sets.numberOf(1, '["d"]')].every((num) => num !== undefined && num > 0)).toBe(true);
      expect(sets.numberOf(1, '["e"]')).toBeUndefined();
    } finally {
      db.close();
    }
  });

  it("answers every tag read as grouping each call's JSON does, over numbered, unnumbered and untagged calls, with other", async () => {
    // Calls as a store held them before the migration: no number.
    expect(unnumber(bounded, "seq % 5 = 0 AND tags_num > 0")).toBeGreaterThan(0);
    const overJson = await readsOf(bounded, false);
    // The cases the read must get right are in the answers: other, the group without tags, tags of several sets.
    const groups = overJson.flatMap((a) => {
      const { top, days } = a as { top?: { groups: Group[] }; days?: Group[] };
      return top ? top.groups : days!;
    });
    expect(groups.some((g) => g.other)).toBe(true);
    expect(groups.some((g) => g.value === "" && !g.other)).toBe(true);
    expect(new Set(groups.filter((g) => g.value !== "").map((g) => g.value)).size).toBeGreaterThanOrEqual(3);
    expect(await readsOf(bounded, true)).toEqual(overJson);
    expect(await readsOf(unbounded, true)).toEqual(overJson);
  });

  it("upgrades a store written before it: its calls are read from their JSON, new calls are numbered, and the answers are the writer's", async () => {
    const [older, newer] = [traces.slice(0, 200), traces.slice(200)];
    await withUpgradedStore(
      (dir) => openSqliteStore(dir, { groupValuesPerDay }),
      older,
      (dir) => rollBackBefore(dir, "tag_sets", []),
      async ({ upgraded, upgradedDir, written, writtenDir }) => {
        expect(numbering(upgradedDir).unnumbered).toBe(older.filter((t) => t.accountId === "acc_a").length);
        await storeAll(upgraded, newer);
        await storeAll(written, newer);
        expect(numbering(upgradedDir).numbered).toBeGreaterThan(0);
        expect(rounded(await tagReads(upgraded))).toEqual(rounded(await tagReads(written)));
        expect(numbering(writtenDir).unnumbered).toBe(0);
      },
    );
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
      expect(numbering(dir).unnumbered).toBe(0);
      expect(setsOf(dir)).toEqual(setsOf(unbounded));
    } finally {
      await store.close();
    }
  });
});
