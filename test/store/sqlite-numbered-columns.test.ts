import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { errorGroupOf } from "../../src/store/error-group.js";
import { latencyBucket } from "../../src/store/latency-bucket.js";
import { migrations } from "../../src/store/sqlite/sqlite-schema.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { errorGroupIndex, traceColumns, writeToRow } from "../../src/store/sqlite/sqlite-trace-row.js";
import type { Store } from "../../src/store/store.js";
import { tempDir } from "../support/temp-dir.js";
import { call } from "../support/stored-call.js";

const hour = 3_600_000;

/** What the dashboard reads of a project, under `init`'s filters: pages, totals, by model and hour, grouped by provider and model, errors. */
async function reads(store: Store, now: number, init: Parameters<typeof create<typeof TraceFilterSchema>>[1] = {}) {
  const filter = create(TraceFilterSchema, { since: timestampFromMs(now - 3 * hour), until: timestampFromMs(now + hour), ...init });
  const page = await store.listTraces("acc_n", filter, { pageSize: 50 });
  return {
    // Ids are the row numbers encrypted with each store's own key: compared without them.
    traces: page.traces.map(({ id: _, ...trace }) => trace),
    totals: await store.usageTotals("acc_n", filter),
    byModel: await store.usageByModel("acc_n", filter),
    byHour: await store.usageByHourTotals("acc_n", filter),
    providers: (await store.usageByGroup("acc_n", filter, { kind: "provider" }, 10)).groups,
    models: (await store.usageByGroup("acc_n", filter, { kind: "model" }, 10)).groups,
    errors: (await store.errorGroups("acc_n", filter, 10)).groups,
  };
}

// D68: provider, model and status are stored as numbers; the store port still answers their text.
describe("embedded store: provider, model and status stored as numbers (D68)", () => {
  it("upgrades a store of the release before in place, and answers every read as a fresh store does", async () => {
    const now = Date.now();
    const traces = [
      call({ accountId: "acc_n", keyId: "key_n", at: now - 2 * hour, provider: "openai", model: "gpt-4o" }),
      call({ accountId: "acc_n", keyId: "key_n", at: now - hour, provider: "anthropic", model: "claude-sonnet-4", status: "error", error: "overloaded" }),
      call({ accountId: "acc_n", keyId: "key_n", at: now - 1000, provider: "openai", model: "gpt-4o-mini", userId: "u-1", tags: ["a"] }),
    ];
    // A database as the release before left it (D65's numbered projects and keys), these traces written as its writer did.
    const oldDir = tempDir();
    const db = new Database(join(oldDir, "calltrace.db"));
    // The functions the earlier migrations call, as openSqliteStore registers them (their tables are empty here).
    db.function("latency_bucket", { deterministic: true }, (ms) => latencyBucket(Number(ms)));
    db.function("error_group_of", { deterministic: true }, (error) => errorGroupOf(error as string | null).id);
    db.function("error_message", { deterministic: true }, (error) => errorGroupOf(error as string | null).message);
    db.function("values_per_day", { deterministic: true }, () => 0);
    db.function("error_users_per_group", { deterministic: true }, () => 0);
    const before = migrations.findIndex((m) => m.includes("provider_num INTEGER NOT NULL"));
    expect(before).toBeGreaterThan(0);
    for (const migration of migrations.slice(0, before)) db.exec(migration);
    db.pragma(`user_version = ${before}`);
    const had = new Set((db.prepare("PRAGMA table_info(traces)").all() as { name: string }[]).map((c) => c.name));
    expect([...had]).toEqual(expect.arrayContaining(["project_num", "key_num", "provider", "model", "status"]));
    const numbered: Record<string, string> = { account_id: "project_num", key_id: "key_num" };
    const columns = traceColumns.flatMap((name, i) => (had.has(numbered[name] ?? name) ? [{ name, i }] : []));
    const insert = db.prepare(
      `INSERT INTO traces (${columns.map((c) => numbered[c.name] ?? c.name).join(", ")}) VALUES (${columns
        .map((c) => (c.name in numbered ? "(SELECT num FROM id_numbers WHERE id = ?)" : c.name === "tags" || c.name === "metadata" ? "jsonb(?)" : "?"))
        .join(", ")})`,
    );
    db.prepare("INSERT INTO id_numbers (id) VALUES ('acc_n'), ('key_n')").run();
    for (const trace of traces) {
      const { values } = writeToRow({ trace, idempotencyKey: undefined });
      // The writer's error group of a failed call (under the day's cap: one group here).
      if (trace.status === "error") values[errorGroupIndex] = errorGroupOf(trace.error ?? null).id;
      insert.run(columns.map((c) => values[c.i]));
    }
    db.close();

    const upgraded = openSqliteStore(oldDir);
    const fresh = openSqliteStore(tempDir());
    try {
      await fresh.writeBatch(traces.map((trace) => ({ trace, idempotencyKey: undefined })));
      const upgradedRows = new Database(join(oldDir, "calltrace.db"), { readonly: true });
      const stored = upgradedRows.prepare("SELECT provider_num, model_num, failed, status FROM traces ORDER BY seq").all() as Record<string, unknown>[];
      upgradedRows.close();
      expect(stored.map((r) => [typeof r.provider_num, typeof r.model_num, r.failed, r.status])).toEqual([
        ["number", "number", 0, "success"],
        ["number", "number", 1, "error"],
        ["number", "number", 0, "success"],
      ]);
      const all = await reads(upgraded, now);
      expect(all.traces.map((t) => [t.provider, t.model, t.status])).toEqual([
        ["openai", "gpt-4o-mini", "success"],
        ["anthropic", "claude-sonnet-4", "error"],
        ["openai", "gpt-4o", "success"],
      ]);
      expect(all.models.map((g) => [g.value, Number(g.totals!.calls)]).sort()).toEqual([
        ["claude-sonnet-4", 1],
        ["gpt-4o", 1],
        ["gpt-4o-mini", 1],
      ]);
      expect(all.errors).toHaveLength(1);
      expect(all).toEqual(await reads(fresh, now));
      for (const init of [{ model: "gpt-4o" }, { provider: "openai" }, { status: "error" }, { status: "success" }, { modelContains: "GPT-4O" }]) {
        const filtered = await reads(upgraded, now, init);
        expect(filtered, JSON.stringify(init)).toEqual(await reads(fresh, now, init));
        expect(filtered.traces.length, JSON.stringify(init)).toBe(init.model !== undefined || init.status === "error" ? 1 : 2);
      }
    } finally {
      await upgraded.close();
      await fresh.close();
    }
  });
});
