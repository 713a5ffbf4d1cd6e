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
 * Numbers a table gives keys, on the writer's side: `assign` numbers the keys not cached yet in a
 * transaction of its own, before the batch's, so a number cached here is always committed (a
 * rolled-back batch cannot leave one behind that another key then takes). A batch's new keys share
 * that transaction: one sync for the dozen ids a fresh store's first import meets, not one each.
 * A key `assign` leaves without a number (past a bound) is not cached, and has none.
 */
export function committedNumbers<K>(
  db: Database.Database,
  assign: (fresh: Set<K>) => Map<K, number>,
): { number: (keys: Iterable<K>) => void; numberOf: (key: K) => number | undefined } {
  const numbers = new Map<K, number>();
  const assignAll = db.transaction(assign);
  return {
    number(keys) {
      const fresh = new Set<K>();
      for (const key of keys) if (!numbers.has(key)) fresh.add(key);
      if (fresh.size === 0) return;
      if (db.inTransaction) throw new Error("keys are numbered outside a transaction");
      // Immediate: an assign that reads before it writes must not find its snapshot stale at the write.
      for (const [key, num] of assignAll.immediate(fresh)) numbers.set(key, num);
    },
    numberOf: (key) => numbers.get(key),
  };
}

/** Project, key, provider and model ids' numbers (id_numbers), for the writer. */
export function idNumbering(db: Database.Database): { number: (ids: Iterable<string>) => void; numberOf: (id: string) => number } {
  const insert = db.prepare(`INSERT INTO id_numbers (id) VALUES (?) ON CONFLICT DO NOTHING`);
  const select = db.prepare(`SELECT num FROM id_numbers WHERE id = ?`).pluck();
  const ids = committedNumbers<string>(db, (fresh) => {
    const given = new Map<string, number>();
    for (const id of fresh) {
      insert.run(id);
      given.set(id, select.get(id) as number);
    }
    return given;
  });
  return {
    number: ids.number,
    numberOf(id) {
      const num = ids.numberOf(id);
      if (num === undefined) throw new Error(`${id} has no number yet`);
      return num;
    },
  };
}
