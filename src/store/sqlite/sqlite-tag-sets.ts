import type Database from "better-sqlite3";
import { committedNumbers } from "./sqlite-id-numbers.js";

/**
 * Tag sets (D83): each project's distinct tags values are numbered in tag_sets (the JSONB the
 * traces table keeps), and a trace's `tags_num` names its set (0: no tags), so the user index,
 * which holds the number, answers a group-by of a user's tags without a table row per call.
 */

/**
 * Most tag sets numbered per project. A client sending new tags on every trace would otherwise
 * grow tag_sets by a row per trace (issue 27 item 4); past it a new set stores `tags_num` NULL and
 * is read from its JSON: the same answers, slower. 100,000 sets take about 5 MB of two or three
 * tags, 18 MB of eight new tags each (bench/RESULTS.md), and the writer's cache of them as much.
 */
export const tagSetsPerProject = 100_000;

/** A trace's tags_num when it has no tags: no set, and no payload byte in the row (SQLite keeps 0 and 1 in the header). */
export const untagged = 0;

/**
 * The writer's numbering of tag sets, before a batch's transaction (committedNumbers): `number`
 * the batch's (project number, tags JSON text) pairs, then `numberOf` each (undefined past the
 * bound). The bound is counted from tag_sets' unique index once per project, then kept in memory
 * while no other writer has numbered a set (the table's last number is still ours).
 */
export function tagSetNumbering(
  db: Database.Database,
  most = tagSetsPerProject,
): { number: (sets: Iterable<[project: number, tags: string]>) => void; numberOf: (project: number, tags: string) => number | undefined } {
  const find = db.prepare(`SELECT num FROM tag_sets WHERE project_num = ? AND tags = jsonb(?)`).pluck();
  const insert = db.prepare(`INSERT INTO tag_sets (project_num, tags) VALUES (?, jsonb(?))`);
  const count = db.prepare(`SELECT COUNT(*) FROM tag_sets WHERE project_num = ?`).pluck();
  const lastNum = db.prepare(`SELECT MAX(num) FROM tag_sets`).pluck();
  let counted = new Map<number, number>();
  let last: number | null | undefined;
  const sets = committedNumbers<string>(db, (fresh) => {
    // Another writer numbered sets since: count again. Unknown until this run ends, so a run that
    // rolls back (its sets counted, not stored) leaves the counts to be taken again too.
    if (lastNum.get() !== last) counted = new Map();
    last = undefined;
    const given = new Map<string, number>();
    for (const key of fresh) {
      const [project, tags] = splitKey(key);
      let num = find.get(project, tags) as number | undefined;
      if (num === undefined) {
        const numbered = counted.get(project) ?? (count.get(project) as number);
        counted.set(project, numbered);
        if (numbered >= most) continue;
        num = Number(insert.run(project, tags).lastInsertRowid);
        counted.set(project, numbered + 1);
      }
      given.set(key, num);
    }
    last = lastNum.get() as number | null;
    return given;
  });
  return {
    number: (pairs) => sets.number(Array.from(pairs, ([project, tags]) => keyOf(project, tags))),
    numberOf: (project, tags) => sets.numberOf(keyOf(project, tags)),
  };
}

const keyOf = (project: number, tags: string) => `${project} ${tags}`;

function splitKey(key: string): [number, string] {
  const space = key.indexOf(" ");
  return [Number(key.slice(0, space)), key.slice(space + 1)];
}

/**
 * SQL joining the tags of the JSON array in `column` as `entry`, one row per distinct tag (a tag
 * repeated on one trace counts once: only its first occurrence joins), and one row of NULL for
 * none (LEFT JOIN), which a group-by counts under "".
 */
export const distinctTagsJoin = (column: string) =>
  ` LEFT JOIN json_each(${column}) AS entry ON NOT EXISTS (SELECT 1 FROM json_each(${column}) AS earlier WHERE earlier.key < entry.key AND earlier.value = entry.value)`;

/**
 * A group-by of tags over calls grouped by tag set (D83): `bySet` sums the calls per tags_num
 * and the pass's `keys` (its columns named so), each set then expands into its distinct tags,
 * whose group value `value` reads from `entry.value` (tags_num 0 has no set: the "" group), and
 * each of `measures` is summed per tag and key. `valuesOnly`: only the tags in @values.
 */
export function tagSetGroupsSql(bySet: string, value: string, keys: string[], measures: string[], valuesOnly: boolean): string {
  const grouped = [...keys, `"group"`].join(", ");
  return `SELECT ${[...keys, `${value} AS "group"`].join(", ")}, ${measures.map((m) => `SUM(${m}) AS ${m}`).join(", ")}
    FROM (${bySet}) AS sets LEFT JOIN tag_sets ON tag_sets.num = sets.tags_num${distinctTagsJoin("tag_sets.tags")}
    ${valuesOnly ? `WHERE ${value} IN (SELECT value FROM json_each(@values))` : ""} GROUP BY ${grouped}`;
}
