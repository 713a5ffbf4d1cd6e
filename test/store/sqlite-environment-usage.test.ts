import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { PriceCheck } from "../../gen/calltrace/v1/trace_pb.js";
import { migrations } from "../../src/store/sqlite/sqlite-schema.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { call } from "../support/stored-call.js";
import { tempDir } from "../support/temp-dir.js";

/**
 * The Overview under an environment on the embedded store (D67): usage_environment_daily, kept by
 * the writer and back-filled by its migration, answers the reads by model, day, key and provider
 * over whole days, so they read no trace.
 */
const day = 86_400_000;
const today = Math.floor(Date.now() / day) * day;
/** Two values a day tracked (D54): a day's third environment is counted under other. */
const groupValuesPerDay = 2;

/** Three past days of calls in four environments (and none), varied in key, model, status, latency and price check. */
const traces = Array.from({ length: 180 }, (_, n) =>
  call({
    at: today - (3 - (n % 3)) * day + n * 60_000,
    keyId: ["key_a", "key_b"][n % 2]!,
    ...([["openai", "gpt-4o"], ["anthropic", "claude-sonnet-4"], ["openai", "o3"]] as const)
      .map(([provider, model]) => ({ provider, model }))[n % 5 % 3]!,
    status: n % 7 === 0 ? "error" : "success",
    latencyMs: 40 + ((n * 37) % 900),
    costUsd: (n % 11) / 1000,
    tokensIn: n,
    priceCheck: [PriceCheck.MATCH, PriceCheck.UNPRICED, PriceCheck.MISMATCH][n % 3]!,
    ...(n % 4 === 3 ? {} : { environment: ["production", "staging", "dev"][Math.floor(n / 9) % 3] }),
  }),
);
const range = { since: timestampFromMs(today - 3 * day), until: timestampFromMs(today) };
const environments = ["production", "staging", "dev", "none"];

/** Every read of the Overview (and a filtered one) under each environment. */
async function overview(store: Store) {
  const answers: unknown[] = [];
  for (const environment of environments) {
    for (const f of [{ environment }, { environment, keyId: "key_b", status: "error" }]) {
      const filter = create(TraceFilterSchema, { ...range, ...f });
      answers.push(
        await store.usageTotals("acc_a", filter),
        await store.usageByModel("acc_a", filter),
        await store.usageByDay("acc_a", filter),
        await store.usageByDayTotals("acc_a", filter),
        await store.latencyHistogram("acc_a", filter),
        await store.usageByGroup("acc_a", filter, { kind: "key" }, 10),
        await store.usageByGroup("acc_a", filter, { kind: "provider" }, 10),
      );
    }
  }
  return answers;
}

/** Sums of costs in another order differ in their last bits: compared to 12 significant digits. */
const rounded = (value: unknown): unknown =>
  typeof value === "number"
    ? Number(value.toPrecision(12))
    : Array.isArray(value)
      ? value.map(rounded)
      : value !== null && typeof value === "object"
        ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rounded(v)]))
        : value;

const stored = (store: Store) => store.writeBatch(traces.map((trace) => ({ trace, idempotencyKey: undefined })));
const tableRows = (dir: string) => {
  const db = new Database(join(dir, "calltrace.db"), { readonly: true });
  try {
    return [
      ...db.prepare(`SELECT * FROM usage_environment_daily ORDER BY account_id, environment, day, provider, model, status, key_id`).all(),
      // Its latency per bucket over keys and statuses (D76).
      ...db.prepare(`SELECT * FROM latency_environment_daily ORDER BY account_id, environment, day, provider, model, bucket`).all(),
    ];
  } finally {
    db.close();
  }
};

describe("embedded store: usage per environment (D67)", () => {
  it("answers the Overview's reads over whole days from the roll-up, not the traces", async () => {
    const dir = tempDir();
    const store = openSqliteStore(dir, { groupValuesPerDay });
    try {
      await stored(store);
      const before = await overview(store);
      expect(tableRows(dir).length).toBeGreaterThan(10);
      // The traces gone from under the store: what still answers came from the roll-ups.
      const db = new Database(join(dir, "calltrace.db"));
      db.prepare("DELETE FROM traces").run();
      db.close();
      const user = await store.usageTotals("acc_a", create(TraceFilterSchema, { ...range, userId: "u" }));
      expect(user.calls).toBe(0n);
      // Each day's third environment was counted under other: those days are read from the traces, now empty.
      const after = await overview(store);
      const production = (answers: unknown[]) => answers.slice(0, 14);
      expect(production(after)).toEqual(production(before));
      expect(after).not.toEqual(before);
    } finally {
      await store.close();
    }
  });

  it("back-fills a store written before it: the same rows and answers as the writer's", async () => {
    const writtenDir = tempDir();
    const written = openSqliteStore(writtenDir, { groupValuesPerDay });
    const oldDir = tempDir();
    const old = openSqliteStore(oldDir, { groupValuesPerDay });
    try {
      await stored(written);
      await stored(old);
    } finally {
      await old.close();
    }
    // The store as the release before left it: every other table as its writer kept them.
    const db = new Database(join(oldDir, "calltrace.db"));
    const before = migrations.findIndex((m) => m.includes("CREATE TABLE usage_environment_daily"));
    expect(before).toBeGreaterThan(0);
    db.exec("DROP TABLE usage_environment_daily; DROP TABLE usage_hourly; DROP TABLE latency_environment_daily");
    // Its traces named a provider and a model by text (D68 numbers them; its migration runs again on reopening).
    db.exec(`ALTER TABLE traces ADD COLUMN provider TEXT;
      ALTER TABLE traces ADD COLUMN model TEXT;
      UPDATE traces SET provider = (SELECT id FROM id_numbers WHERE num = provider_num), model = (SELECT id FROM id_numbers WHERE num = model_num);`);
    db.pragma(`user_version = ${before}`);
    db.close();
    const upgraded = openSqliteStore(oldDir, { groupValuesPerDay });
    try {
      expect(rounded(tableRows(oldDir))).toEqual(rounded(tableRows(writtenDir)));
      expect(rounded(await overview(upgraded))).toEqual(rounded(await overview(written)));
    } finally {
      await upgraded.close();
      await written.close();
    }
  });
});
