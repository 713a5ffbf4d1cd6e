import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { StoredTraceSchema, TraceSource } from "../../gen/calltrace/v1/trace_pb.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { TraceWrite } from "../../src/store/trace-store.js";
import { tempDir } from "../support/temp-dir.js";

const hour = 3_600_000;

/** An OTLP call as ingest hands it over: its idempotency key made by src/otlp/llm-call.ts. */
function call(accountId: string, keyId: string, idempotencyKey: string, spanId: string, source = TraceSource.OTLP): TraceWrite {
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
  return { trace, idempotencyKey };
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
    const dir = tempDir();
    await openSqliteStore(dir).close();
    // Back to the schema before D37, with claims the old writer made: one an hour ago, one expired.
    const db = new Database(join(dir, "calltrace.db"));
    const version = db.pragma("user_version", { simple: true }) as number;
    db.exec(`DROP INDEX traces_account_otlp_call; ALTER TABLE traces DROP COLUMN otlp_call_key; DROP TABLE legacy_otlp_claims;`);
    db.pragma(`user_version = ${version - 1}`);
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
