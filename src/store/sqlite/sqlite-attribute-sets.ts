import type Database from "better-sqlite3";
import { committedNumbers } from "./sqlite-id-numbers.js";

/**
 * Attribute sets (D83 tags, D86 metadata): each project's distinct tags values, and its distinct
 * metadata values (the JSONB the traces table keeps), are numbered in a table of sets, and a
 * trace's number column names its set (0: none), so the user index, which holds the numbers,
 * answers a group-by of a user's tags or metadata without a table row per call.
 */
export interface AttributeSet {
  /** The table numbering the sets, and its column of the set's JSONB. */
  table: "tag_sets" | "metadata_sets";
  json: "tags" | "metadata";
  /** The traces table's column naming a trace's set. */
  num: "tags_num" | "metadata_num";
}

export const tagSet: AttributeSet = { table: "tag_sets", json: "tags", num: "tags_num" };
export const metadataSet: AttributeSet = { table: "metadata_sets", json: "metadata", num: "metadata_num" };

/**
 * Most sets of each kind numbered per project. A client sending new tags or metadata on every
 * trace would otherwise grow a table of sets by a row per trace (issue 27 item 4); past it a new
 * set stores its number NULL and is read from the row's JSON: the same answers, slower. 100,000
 * sets take about 5 MB of two or three tags, 18 MB of eight new tags each (bench/RESULTS.md), and
 * the writer's cache of them as much.
 */
export const setsPerProject = 100_000;

/** A trace's set number when it has no such attribute: no set, and no payload byte in the row (SQLite keeps 0 and 1 in the header). */
export const noSet = 0;

/**
 * The writer's numbering of one kind of set, before a batch's transaction (committedNumbers, one
 * per project, keyed by the JSON text itself: no key string built per trace): `number` the batch's
 * (project number, JSON text) pairs, then `numberOf` each (undefined past the bound). The bound is
 * counted from the table's unique index once per project, then kept in memory while no other
 * writer has numbered a set (the table's last number is still ours).
 */
export function setNumbering(
  db: Database.Database,
  set: AttributeSet,
  most = setsPerProject,
): { number: (sets: Iterable<[project: number, json: string]>) => void; numberOf: (project: number, json: string) => number | undefined } {
  const find = db.prepare(`SELECT num FROM ${set.table} WHERE project_num = ? AND ${set.json} = jsonb(?)`).pluck();
  const insert = db.prepare(`INSERT INTO ${set.table} (project_num, ${set.json}) VALUES (?, jsonb(?))`);
  const count = db.prepare(`SELECT COUNT(*) FROM ${set.table} WHERE project_num = ?`).pluck();
  const lastNum = db.prepare(`SELECT MAX(num) FROM ${set.table}`).pluck();
  let counted = new Map<number, number>();
  let last: number | null | undefined;
  const assign = (project: number, fresh: Set<string>) => {
    // Another writer numbered sets since: count again. Unknown until this run ends, so a run that
    // rolls back (its sets counted, not stored) leaves the counts to be taken again too.
    if (lastNum.get() !== last) counted = new Map();
    last = undefined;
    const given = new Map<string, number>();
    for (const json of fresh) {
      let num = find.get(project, json) as number | undefined;
      if (num === undefined) {
        const numbered = counted.get(project) ?? (count.get(project) as number);
        counted.set(project, numbered);
        if (numbered >= most) continue;
        num = Number(insert.run(project, json).lastInsertRowid);
        counted.set(project, numbered + 1);
      }
      given.set(json, num);
    }
    last = lastNum.get() as number | null;
    return given;
  };
  const projects = new Map<number, ReturnType<typeof committedNumbers<string>>>();
  const numbersOf = (project: number) => {
    let numbers = projects.get(project);
    if (!numbers) projects.set(project, (numbers = committedNumbers<string>(db, (fresh) => assign(project, fresh))));
    return numbers;
  };
  return {
    number(pairs) {
      const byProject = new Map<number, string[]>();
      for (const [project, json] of pairs) {
        const list = byProject.get(project);
        if (list) list.push(json);
        else byProject.set(project, [json]);
      }
      for (const [project, jsons] of byProject) numbersOf(project).number(jsons);
    },
    numberOf: (project, json) => projects.get(project)?.numberOf(json),
  };
}

/**
 * SQL joining the tags of the JSON array in `column` as `entry`, one row per distinct tag (a tag
 * repeated on one trace counts once: only its first occurrence joins), and one row of NULL for
 * none (LEFT JOIN), which a group-by counts under "".
 */
export const distinctTagsJoin = (column: string) =>
  ` LEFT JOIN json_each(${column}) AS entry ON NOT EXISTS (SELECT 1 FROM json_each(${column}) AS earlier WHERE earlier.key < entry.key AND earlier.value = entry.value)`;

/**
 * A group-by of tags or metadata over calls grouped by set (D83, D86): `bySet` sums the calls per
 * set number and the pass's `keys` (its columns named so), each set is then joined to its JSON
 * (`join`, reading `<table>.<json>`: one row per tag or metadata key, or one for the value of a
 * key), whose group value `value` reads (number 0 has no set: the "" group), and each of
 * `measures` is summed per group and key. `valuesOnly`: only the groups in @values.
 */
export function setGroupsSql(
  set: AttributeSet,
  bySet: string,
  group: { value: string; join: string },
  keys: string[],
  measures: string[],
  valuesOnly: boolean,
): string {
  const grouped = [...keys, `"group"`].join(", ");
  return `SELECT ${[...keys, `${group.value} AS "group"`].join(", ")}, ${measures.map((m) => `SUM(${m}) AS ${m}`).join(", ")}
    FROM (${bySet}) AS sets LEFT JOIN ${set.table} ON ${set.table}.num = sets.${set.num}${group.join}
    ${valuesOnly ? `WHERE ${group.value} IN (SELECT value FROM json_each(@values))` : ""} GROUP BY ${grouped}`;
}
