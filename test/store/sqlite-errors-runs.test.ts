import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs, timestampMs } from "@bufbuild/protobuf/wkt";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { latencyBucket } from "../../src/store/latency-bucket.js";
import { sqliteErrorReader } from "../../src/store/sqlite/sqlite-error-reader.js";
import { sqliteRunReader } from "../../src/store/sqlite/sqlite-run-reader.js";
import { sequenceIds } from "../../src/store/trace-id.js";
import { migrations } from "../../src/store/sqlite/sqlite-schema.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { traceColumns } from "../../src/store/sqlite/sqlite-trace-row.js";
import { writeToRow } from "../../src/store/sqlite/sqlite-trace-row.js";
import type { Store } from "../../src/store/store.js";
import { tempDir } from "../support/temp-dir.js";
import { failures } from "../support/error-traces.js";
import { call } from "../support/stored-call.js";

const day = 86_400_000;
const range = (now: number, init: Record<string, string> = {}) =>
  create(TraceFilterSchema, { since: timestampFromMs(now - 4 * day), until: timestampFromMs(now + day), ...init });
const stored = (store: Store, traces: ReturnType<typeof call>[]) =>
  store.writeBatch(traces.map((trace) => ({ trace, idempotencyKey: undefined })));

/** The embedded store's answers with its error roll-ups, and read from the failed calls alone (the switch off). */
async function bothPaths(dir: string, store: Store, accountId: string, now: number, init: Record<string, string> = {}) {
  const db = new Database(join(dir, "calltrace.db"), { readonly: true });
  try {
    const fromCalls = await sqliteErrorReader(db, 0, { rollups: false }).errorGroups(accountId, range(now, init), 50);
    return { fromRollups: await store.errorGroups(accountId, range(now, init), 50), fromCalls };
  } finally {
    db.close();
  }
}

describe("embedded store: error groups", () => {
  it("answers the same from the roll-ups as from the failed calls", async () => {
    const dir = tempDir();
    const store = openSqliteStore(dir);
    try {
      const now = Date.now();
      await stored(store, failures("acc_1", now));
      const { fromRollups, fromCalls } = await bothPaths(dir, store, "acc_1", now);
      expect(fromRollups.groups.length).toBeGreaterThan(2);
      expect(fromRollups).toEqual(fromCalls);
    } finally {
      await store.close();
    }
  });

  it("answers the same from the roll-ups as from the failed calls under a key, provider, model or model name (D70)", async () => {
    const dir = tempDir();
    const store = openSqliteStore(dir);
    try {
      const now = Date.now();
      await stored(store, failures("acc_1", now));
      const filters: Record<string, string>[] = [
        { model: "gpt-4o" },
        { modelContains: "MINI" },
        { provider: "anthropic", status: "error" },
        { keyId: "key_b", model: "gpt-4o" },
      ];
      for (const init of filters) {
        const { fromRollups, fromCalls } = await bothPaths(dir, store, "acc_1", now, init);
        expect(fromRollups.groups.length, JSON.stringify(init)).toBeGreaterThan(0);
        expect(fromRollups, JSON.stringify(init)).toEqual(fromCalls);
      }
      // Under a key and a model, a group lists only the users of that key's calls of that model.
      const { groups } = await store.errorGroups("acc_1", range(now, { keyId: "key_a", model: "gpt-4o-mini" }), 50);
      const limited = groups.find((g) => g.message.includes("Rate limit"))!;
      expect(limited, JSON.stringify(groups.map((g) => g.message))).toBeDefined();
      expect(limited.users.map((u) => u.value).sort()).toEqual(["user-0", "user-3", "user-4"]);
    } finally {
      await store.close();
    }
  });

  it("counts a project's day past its cap of groups as the other group, which the group filter lists exactly", async () => {
    const dir = tempDir();
    const store = openSqliteStore(dir, { groupValuesPerDay: 3 });
    try {
      const now = Date.now();
      // Six kinds of failure today (a unique message per call, as a careless client sends), and one yesterday.
      const kinds = ["timeout", "bad gateway", "overloaded", "refused", "reset", "quota"];
      await stored(
        store,
        kinds.flatMap((kind, i) =>
          [0, 1].map((j) => call({ accountId: "acc_c", at: now - 1000 * (i * 2 + j), status: "error", error: kind })),
        ),
      );
      await stored(store, [call({ accountId: "acc_c", at: now - day, status: "error", error: "quota" })]);
      const answer = await store.errorGroups("acc_c", range(now), 50);
      expect(answer.totalErrors).toBe(13);
      const other = answer.groups.find((g) => g.id === "other")!;
      expect(Number(other.calls)).toBe(6);
      // The first three kinds of today are tracked; "quota" is yesterday's group, and today's other.
      const tracked = answer.groups.filter((g) => g.id !== "other").map((g) => [g.message, Number(g.calls)]);
      expect(tracked.sort()).toEqual([
        ["bad gateway", 2],
        ["overloaded", 2],
        ["quota", 1],
        ["timeout", 2],
      ]);
      const page = await store.listTraces("acc_c", create(TraceFilterSchema, { ...range(now), errorGroup: "other" }), { pageSize: 50 });
      expect(page.traces.map((t) => t.error).sort()).toEqual(["quota", "quota", "refused", "refused", "reset", "reset"]);
      // The roll-ups gained three group rows today, however many kinds came.
      const db = new Database(join(dir, "calltrace.db"), { readonly: true });
      expect(
        db
          .prepare(`SELECT COUNT(*) FROM error_groups WHERE account_id = 'acc_c' AND day = ?`)
          .pluck()
          .get(Math.floor(now / day)),
      ).toBe(3);
      db.close();
      const { fromRollups, fromCalls } = await bothPaths(dir, store, "acc_c", now);
      expect(fromRollups).toEqual(fromCalls);
    } finally {
      await store.close();
    }
  });
});

describe("embedded store: runs by cost (D75)", () => {
  it("lists the same dearest runs from the (project, end, cost) index as from every run of the range, ties at the limit by id", async () => {
    const dir = tempDir();
    const store = openSqliteStore(dir);
    try {
      const now = Date.now();
      // 40 runs over five days (24 of them in the range), three costs, so many ties (as free and flat-priced runs make them), and one run that ended before the range.
      const traces = Array.from({ length: 120 }, (_, i) =>
        call({ accountId: "acc_rc", at: now - (i % 5) * day - 1000 * i, sessionId: `s-${i % 40}`, costUsd: i < 40 ? [0, 0.25, 0.5][i % 3]! : 0 }),
      );
      traces.push(call({ accountId: "acc_rc", at: now - 20 * day, sessionId: "old", costUsd: 99 }));
      await stored(store, traces);
      const db = new Database(join(dir, "calltrace.db"), { readonly: true });
      try {
        const ids = sequenceIds(db.prepare(`SELECT value FROM store_secrets WHERE name = 'trace_id_key'`).pluck().get() as Buffer);
        const everyRun = sqliteRunReader(db, 0, ids, { costIndex: false });
        const since = create(TraceFilterSchema, { since: timestampFromMs(now - 3 * day) });
        for (const limit of [1, 7, 13, 40, 50]) {
          const fromIndex = await store.listRuns("acc_rc", since, "cost", limit);
          expect(fromIndex, `limit ${limit}`).toEqual(await everyRun.listRuns("acc_rc", since, "cost", limit));
          expect(fromIndex.length).toBe(Math.min(limit, 24));
          expect(fromIndex.map((r) => r.id)).not.toContain("session:old");
        }
      } finally {
        db.close();
      }
    } finally {
      await store.close();
    }
  });
});

describe("upgrading the embedded store to error groups and runs", () => {
  it("groups and sums the traces stored before, as the writer would have", async () => {
    const now = Date.now();
    const traces = [
      ...failures("acc_u", now),
      call({ accountId: "acc_u", at: now - 5000, latencyMs: 900, otlpTraceId: "b".repeat(32), costUsd: 0.5 }),
      call({ accountId: "acc_u", at: now - 4000, latencyMs: 100, otlpTraceId: "b".repeat(32), status: "error", error: "boom 42" }),
      call({ accountId: "acc_u", at: now - 3000, sessionId: "s-1" }),
    ];
    // A database as the release before left it, with these traces written by its writer.
    const oldDir = tempDir();
    const db = new Database(join(oldDir, "calltrace.db"));
    db.function("latency_bucket", { deterministic: true }, (ms) => latencyBucket(Number(ms)));
    const before = migrations.findIndex((m) => m.includes("ADD COLUMN error_group"));
    expect(before).toBeGreaterThan(0);
    for (const migration of migrations.slice(0, before)) db.exec(migration);
    db.pragma(`user_version = ${before}`);
    // The columns that release had (later migrations add more), by name.
    const had = new Set((db.prepare("PRAGMA table_info(traces)").all() as { name: string }[]).map((c) => c.name));
    const columns = traceColumns.flatMap((name, i) => (had.has(name) ? [{ name, i }] : []));
    const insert = db.prepare(
      `INSERT INTO traces (${columns.map((c) => c.name).join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
    );
    for (const trace of traces) {
      const { values } = writeToRow({ trace, idempotencyKey: undefined });
      insert.run(columns.map((c) => values[c.i]));
    }
    db.close();

    const upgraded = openSqliteStore(oldDir);
    const fresh = openSqliteStore(tempDir());
    try {
      await stored(fresh, traces);
      expect(await upgraded.errorGroups("acc_u", range(now), 50)).toEqual(await fresh.errorGroups("acc_u", range(now), 50));
      const underKey = range(now, { keyId: "key_a", model: "gpt-4o" });
      expect(await upgraded.errorGroups("acc_u", underKey, 50)).toEqual(await fresh.errorGroups("acc_u", underKey, 50));
      const runs = await upgraded.listRuns("acc_u", range(now), "recent", 50);
      expect(runs).toEqual(await fresh.listRuns("acc_u", range(now), "recent", 50));
      expect(runs.map((r) => [r.id, Number(r.calls), Number(r.errors), timestampMs(r.start!)])).toEqual([
        ["session:s-1", 1, 0, now - 3000 - 250],
        [`otlp:${"b".repeat(32)}`, 2, 1, now - 5900],
      ]);
    } finally {
      await upgraded.close();
      await fresh.close();
    }
  });
});
