import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { StoredTraceSchema, TraceSource } from "../../gen/calltrace/v1/trace_pb.js";
import { latencyBucket } from "../../src/store/latency-bucket.js";
import { migrations } from "../../src/store/sqlite/sqlite-schema.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { TraceWrite } from "../../src/store/trace-store.js";
import { tempDir } from "../support/temp-dir.js";

const hour = 3_600_000;

/**
 * A database as a release before one migration left it: every migration before the first that
 * contains `change` (found by its text, so later migrations do not shift it), open for rows as
 * that release's writer made them; the store opened on `dir` next migrates it the rest of the way.
 */
function olderStore(change: string): { dir: string; db: Database.Database } {
  const dir = tempDir();
  const db = new Database(join(dir, "calltrace.db"));
  db.function("latency_bucket", { deterministic: true }, (ms) => latencyBucket(Number(ms)));
  const before = migrations.findIndex((migration) => migration.includes(change));
  expect(before).toBeGreaterThan(0);
  for (const migration of migrations.slice(0, before)) db.exec(migration);
  db.pragma(`user_version = ${before}`);
  return { dir, db };
}

/** An OTLP call as ingest hands it over: its idempotency key made by src/otlp/llm-call.ts. */
function call(
  accountId: string,
  keyId: string,
  idempotencyKey: string,
  spanId: string,
  source = TraceSource.OTLP,
  otlpStartS = 1_795_000_000,
): TraceWrite {
  const trace = create(StoredTraceSchema, {
    receivedAt: timestampFromMs(Date.now()),
    keyId,
    accountId,
    provider: "openai",
    model: "gpt-4o",
    tokensIn: 10,
    tokensOut: 2,
    latencyMs: 100,
    status: "success",
    source,
    otlpTraceId: source === TraceSource.OTLP ? "1".repeat(32) : "",
    otlpSpanId: source === TraceSource.OTLP ? spanId : "",
  });
  return { trace, idempotencyKey, otlpStartS };
}

describe("embedded store: OTLP calls deduplicated by their rows (D37)", () => {
  it("a call is stored once per account, from any of its keys; a REST write with the same key text is not a call", async () => {
    const store = openSqliteStore(tempDir());
    try {
      const key = "otlp:openai:resp_1";
      expect(
        await store.writeBatch([
          call("acc_1", "key_1", key, "a".repeat(16)),
          call("acc_1", "key_2", key, "b".repeat(16)),
          call("acc_2", "key_3", key, "c".repeat(16)),
          call("acc_1", "key_1", key, "", TraceSource.API),
        ]),
      ).toEqual([{ kind: "stored" }, { kind: "duplicate" }, { kind: "stored" }, { kind: "stored" }]);
      // Claims no row: the REST write's Idempotency-Key is still its own.
      expect(await store.writeBatch([call("acc_1", "key_1", key, "", TraceSource.API)])).toEqual([{ kind: "duplicate" }]);
    } finally {
      await store.close();
    }
  });

  it("an OTLP call claimed before the upgrade stays a duplicate until its claim expires", async () => {
    // Back to the schema before D37 (and D44), with claims the old writer made: one an hour ago, one expired.
    const { dir, db } = olderStore("ADD COLUMN otlp_call_key");
    const claim = db.prepare(`INSERT INTO idempotency (key_id, idempotency_key, created_at) VALUES (?, ?, ?)`);
    claim.run("key_1", "otlp:openai:resp_recent", Date.now() - hour);
    claim.run("key_1", "otlp:openai:resp_expired", Date.now() - 25 * hour);
    db.close();

    const store = openSqliteStore(dir);
    try {
      expect(
        await store.writeBatch([
          call("acc_1", "key_1", "otlp:openai:resp_recent", "a".repeat(16)),
          call("acc_1", "key_1", "otlp:openai:resp_expired", "b".repeat(16)),
          call("acc_1", "key_1", "otlp:openai:resp_new", "c".repeat(16)),
          call("acc_1", "key_1", "otlp:openai:resp_new", "d".repeat(16)),
        ]),
      ).toEqual([{ kind: "duplicate" }, { kind: "stored" }, { kind: "stored" }, { kind: "duplicate" }]);
    } finally {
      await store.close();
    }
  });
});

describe("embedded store: OTLP call keys by their span's start second (D44)", () => {
  const at = (startS: number, key: string, spanId = "a".repeat(16)) => call("acc_1", "key_1", key, spanId, TraceSource.OTLP, startS);

  it("a retried call is a duplicate at any start, long past or far ahead; the same key from another span a second apart too, not two", async () => {
    const store = openSqliteStore(tempDir());
    try {
      const past = 946_684_800; // 2000-01-01
      const future = 4_102_444_800; // 2100-01-01
      expect(
        await store.writeBatch([at(past, "otlp:openai:r_past"), at(0, "otlp:openai:r_zero"), at(future, "otlp:openai:r_future")]),
      ).toEqual([{ kind: "stored" }, { kind: "stored" }, { kind: "stored" }]);
      // The same spans again, in a later batch.
      expect(
        await store.writeBatch([at(past, "otlp:openai:r_past"), at(0, "otlp:openai:r_zero"), at(future, "otlp:openai:r_future")]),
      ).toEqual([{ kind: "duplicate" }, { kind: "duplicate" }, { kind: "duplicate" }]);
      // A second instrumentation's span of a call (same response id) starting within a second, either side.
      expect(
        await store.writeBatch([at(past + 1, "otlp:openai:r_past", "b".repeat(16)), at(past - 1, "otlp:openai:r_past", "c".repeat(16))]),
      ).toEqual([{ kind: "duplicate" }, { kind: "duplicate" }]);
      // Two seconds apart is past the window (docs/decisions.md D44): another call.
      expect(await store.writeBatch([at(past + 2, "otlp:openai:r_past", "d".repeat(16))])).toEqual([{ kind: "stored" }]);
    } finally {
      await store.close();
    }
  });

  it("a call stored before the upgrade (no start kept) is a duplicate for a day after it, then the key may be stored again", async () => {
    const { dir, db } = olderStore("ADD COLUMN otlp_start_s");
    // A row as the writer before D44 stored it: the call key, no start.
    db.prepare(
      `INSERT INTO traces (received_at, key_id, account_id, country, provider, model, tokens_in, tokens_out, latency_ms, cost_usd, status, source, otlp_trace_id, otlp_span_id, otlp_call_key)
       VALUES (?, 'key_1', 'acc_1', 'ZZ', 'openai', 'gpt-4o', 1, 1, 1, 0, 'success', 2, ?, ?, ?)`,
    ).run(Date.now() - hour, "1".repeat(32), "a".repeat(16), "otlp:1111:aaaa");
    db.close();

    const store = openSqliteStore(dir);
    try {
      // The same span retried after the upgrade, then a new call, then that one retried.
      expect(await store.writeBatch([at(1_795_000_000, "otlp:1111:aaaa"), at(1_795_000_000, "otlp:2222:bbbb")])).toEqual([
        { kind: "duplicate" },
        { kind: "stored" },
      ]);
      expect(await store.writeBatch([at(1_795_000_000, "otlp:2222:bbbb")])).toEqual([{ kind: "duplicate" }]);
    } finally {
      await store.close();
    }
    // Past the day the migration gave the old rows, their keys are no longer looked up.
    const aged = new Database(join(dir, "calltrace.db"));
    aged.prepare(`UPDATE legacy_otlp_calls SET until = ?`).run(Date.now() - 1);
    aged.close();
    const later = openSqliteStore(dir);
    try {
      expect(await later.writeBatch([at(1_795_000_000, "otlp:1111:aaaa")])).toEqual([{ kind: "stored" }]);
    } finally {
      await later.close();
    }
  });

  it("the writer looks for the call in the seconds beside its start with seeks in the call index, not a scan", () => {
    const dir = tempDir();
    return openSqliteStore(dir)
      .close()
      .then(() => {
        const db = new Database(join(dir, "calltrace.db"));
        const plan = db
          .prepare(
            `EXPLAIN QUERY PLAN SELECT 1 FROM traces WHERE project_num = 1 AND otlp_start_s IN (1, 3) AND otlp_call_key = 'k' AND otlp_call_key IS NOT NULL`,
          )
          .all() as { detail: string }[];
        db.close();
        expect(plan.map((p) => p.detail).join("\n")).toMatch(
          /USING COVERING INDEX traces_account_otlp_start_call \(project_num=\? AND otlp_start_s=\? AND otlp_call_key=\?\)/,
        );
      });
  });
});
