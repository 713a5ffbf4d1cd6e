import type Database from "better-sqlite3";

/**
 * Project and key ids as small numbers (D65): the traces table, its indexes and the largest
 * roll-ups (group_daily, runs) name a project in `project_num` and a key in
 * `key_num`, numbers of the id_numbers table, in place of 16 characters of text repeated in every
 * index entry. The store port keeps text ids: SQL translates them at each read's boundary, and the
 * writer numbers new ids before it commits a batch. A number never changes once given.
 */

/** SQL for the number of the id in `param` (NULL for an id never stored, which matches no row). */
export const numberOf = (param: string): string => `(SELECT num FROM id_numbers WHERE id = ${param})`;

/** SQL for the id a number column names. */
export const idOf = (column: string): string => `(SELECT id FROM id_numbers WHERE num = ${column})`;

/**
 * The writer's side: `number` gives a new id its number in a statement of its own, before the
 * batch's transaction, so a number cached here is always committed (a rolled-back batch cannot
 * leave one behind that another id then takes); `numberOf` answers from the cache.
 */
export function idNumbering(db: Database.Database): { number: (id: string) => void; numberOf: (id: string) => number } {
  const insert = db.prepare(`INSERT INTO id_numbers (id) VALUES (?) ON CONFLICT DO NOTHING`);
  const select = db.prepare(`SELECT num FROM id_numbers WHERE id = ?`).pluck();
  const numbers = new Map<string, number>();
  return {
    number(id) {
      if (numbers.has(id)) return;
      if (db.inTransaction) throw new Error("ids are numbered outside a transaction");
      insert.run(id);
      numbers.set(id, select.get(id) as number);
    },
    numberOf(id) {
      const num = numbers.get(id);
      if (num === undefined) throw new Error(`${id} has no number yet`);
      return num;
    },
  };
}
