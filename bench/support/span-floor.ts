import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { StoredTraceSchema } from "../../gen/calltrace/v1/trace_pb.js";
import { repoRoot } from "./processes.js";

/** What a stored OTLP span costs at the least, in µs of CPU on one thread. */
export interface SpanFloor {
  /** Reading the span from an Export's protobuf and mapping it to a trace, priced. */
  readUs: number;
  /** Its row alone, in the store's traces table with none of its indexes. */
  rowUs: number;
  /** Its row in that table with one index: the unique call key that makes a retried Export store nothing twice. */
  keyedRowUs: number;
}

/** The store's unique index on the call key, the one that keeps the retry promise. */
const callKeyIndex = "traces_account_otlp_start_call";

/** Rows per commit: the ten Exports the OTLP load keeps in flight, merged into one commit (the writer merges what queues up). */
const rowsPerCommit = 1000;

/**
 * The least a stored OTLP span can cost on this machine, far less than the service does per span:
 * its reading and mapping, then a durable row (WAL, synchronous=FULL, as the store commits) in the
 * store's traces table stripped of its indexes, alone and with the unique call key, the one index
 * that keeps the retry promise (D37, D44). No HTTP, key check, validation, hand-over to a thread,
 * nested-span look-up, dashboard index or roll-up. Spans start at `spansPerSecond`, so the call
 * key's start second holds as many keys as it would at that rate. Runs on the compiled service
 * (dist/, built by the caller), as the service runs; best of three for the reading.
 */
export async function spanFloor(exportBody: Uint8Array, spansPerSecond: number): Promise<SpanFloor> {
  const dist = (path: string) => import(`${repoRoot}/dist/src/${path}`);
  const { readExport } = (await dist("otlp/otlp-protobuf.js")) as typeof import("../../src/otlp/otlp-protobuf.js");
  const { callsOf } = (await dist("otlp/export-calls.js")) as typeof import("../../src/otlp/export-calls.js");
  const { serverCost } = (await dist("pricing/server-prices.js")) as typeof import("../../src/pricing/server-prices.js");
  const { openSqliteDatabase, walAutocheckpointPages } = (await dist("store/sqlite/sqlite-database.js")) as typeof import(
    "../../src/store/sqlite/sqlite-database.js"
  );
  const { numberedIndexes, storedTraceColumns, storedTraceValuesSql, writeToRow } = (await dist("store/sqlite/sqlite-trace-row.js")) as typeof import("../../src/store/sqlite/sqlite-trace-row.js");
  const { openSqliteStore } = (await dist("store/sqlite/sqlite-store.js")) as typeof import("../../src/store/sqlite/sqlite-store.js");

  const options = { price: serverCost, metadataAttributes: [] };
  const read = () => callsOf(readExport(exportBody)!, options).calls;
  const calls = read();
  if (calls.length === 0) throw new Error("the floor's Export holds no LLM call");
  let readUs = Number.POSITIVE_INFINITY;
  for (let attempt = 0; attempt < 3; attempt++) {
    const exports = 1000;
    const began = cpuMicros();
    for (let i = 0; i < exports; i++) read();
    readUs = Math.min(readUs, (cpuMicros() - began) / (exports * calls.length));
  }

  const { trace, origin, idempotencyKey, otlpStartS } = calls[0]!.submission;
  const { $typeName: _, ...fields } = trace;
  const stored = create(StoredTraceSchema, { ...fields, ...origin, keyId: "key_floor", accountId: "acc_floor", country: "DE", receivedAt: timestampNow() });
  const template: unknown[] = writeToRow({ trace: stored, idempotencyKey, otlpStartS }).values;
  // The table names the key, the project, the provider and the model by number (D65, D68).
  for (const i of numberedIndexes) template[i] = 1;
  const rowCost = async (keyed: boolean) => {
    // The traces table as the store creates it, then without its indexes (the call key's kept when `keyed`).
    const dir = mkdtempSync(join(tmpdir(), "calltrace-floor-"));
    await openSqliteStore(dir).close();
    const db = openSqliteDatabase(join(dir, "calltrace.db"));
    db.pragma(`wal_autocheckpoint = ${walAutocheckpointPages}`);
    const indexes = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'traces' AND sql IS NOT NULL`).pluck().all() as string[];
    if (keyed && !indexes.includes(callKeyIndex)) throw new Error(`the store has no index ${callKeyIndex}`);
    for (const name of indexes) if (!(keyed && name === callKeyIndex)) db.exec(`DROP INDEX ${name}`);
    const insert = db.prepare(`INSERT INTO traces (${storedTraceColumns.join(", ")}) VALUES (${storedTraceValuesSql})`);
    const commit = db.transaction((rows: unknown[][]) => {
      for (const row of rows) insert.run(...row);
    });
    const prefilled = 100_000;
    const measured = 200_000;
    // Random trace ids and call keys (of random response ids), made before the clock starts: their making is not the store's cost.
    const traceIds = Array.from({ length: prefilled + measured }, () => randomBytes(16).toString("hex"));
    const callKeys = Array.from({ length: prefilled + measured }, () => `otlp:openai:chatcmpl-${randomBytes(16).toString("hex")}`);
    const rows = Array.from({ length: rowsPerCommit }, () => [...template]);
    const startMs = Date.now();
    let began = 0;
    for (let n = 0; n < prefilled + measured; n += rowsPerCommit) {
      if (n === prefilled) began = cpuMicros();
      for (let i = 0; i < rowsPerCommit; i++) {
        const row = rows[i]!;
        const at = startMs + Math.floor(((n + i) * 1000) / spansPerSecond);
        row[0] = at;
        row[18] = traceIds[n + i]!;
        row[28] = callKeys[n + i]!;
        row[29] = Math.floor(at / 1000);
      }
      commit(rows);
    }
    const us = (cpuMicros() - began) / measured;
    db.close();
    rmSync(dir, { recursive: true, force: true });
    return us;
  };
  return { readUs, rowUs: await rowCost(false), keyedRowUs: await rowCost(true) };
}

function cpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}
