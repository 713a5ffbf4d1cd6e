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
 * The writer's side: `number` gives new ids their numbers in a transaction of their own, before
 * the batch's, so a number cached here is always committed (a rolled-back batch cannot leave one
 * behind that another id then takes); `numberOf` answers from the cache. A batch's new ids share
 * that transaction: one sync for the dozen ids a fresh store's first import meets, not one each.
 */
export function idNumbering(db: Database.Database): { number: (ids: Iterable<string>) => void; numberOf: (id: string) => number } {
  const insert = db.prepare(`INSERT INTO id_numbers (id) VALUES (?) ON CONFLICT DO NOTHING`);
  const select = db.prepare(`SELECT num FROM id_numbers WHERE id = ?`).pluck();
  const numbers = new Map<string, number>();
  const numberAll = db.transaction((fresh: Set<string>) => {
    const given = new Map<string, number>();
    for (const id of fresh) {
      insert.run(id);
      given.set(id, select.get(id) as number);
    }
    return given;
  });
  return {
    number(ids) {
      const fresh = new Set<string>();
      for (const id of ids) if (!numbers.has(id)) fresh.add(id);
      if (fresh.size === 0) return;
      if (db.inTransaction) throw new Error("ids are numbered outside a transaction");
      // Cached only once committed.
      for (const [id, num] of numberAll(fresh)) numbers.set(id, num);
    },
    numberOf(id) {
      const num = numbers.get(id);
      if (num === undefined) throw new Error(`${id} has no number yet`);
      return num;
    },
  };
}
