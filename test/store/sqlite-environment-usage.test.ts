import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import {
  deleteTraces,
  variedCalls,
  overviewReads,
  rollBackBefore,
  rounded,
  storeAll,
  tableRows,
  withUpgradedStore,
} from "../support/rollup-checks.js";
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
const traces = variedCalls(180, (n) => today - (3 - (n % 3)) * day + n * 60_000);
const range = { since: timestampFromMs(today - 3 * day), until: timestampFromMs(today) };
const environments = ["production", "staging", "dev", "none"];

/** Every read of the Overview (and a filtered one) under each environment. */
async function overview(store: Store) {
  const answers: unknown[] = [];
  for (const environment of environments) {
    for (const f of [{ environment }, { environment, keyId: "key_b", status: "error" }]) {
      answers.push(...(await overviewReads(store, "acc_a", create(TraceFilterSchema, { ...range, ...f }), false)));
    }
  }
  return answers;
}

const stored = (store: Store) => storeAll(store, traces);
const environmentRows = (dir: string) =>
  tableRows(
    dir,
    `SELECT * FROM usage_environment_daily ORDER BY account_id, environment, day, provider, model, status, key_id`,
    // Its latency per bucket over keys and statuses (D76).
    `SELECT * FROM latency_environment_daily ORDER BY account_id, environment, day, provider, model, bucket`,
  );

describe("embedded store: usage per environment (D67)", () => {
  it("answers the Overview's reads over whole days from the roll-up, not the traces", async () => {
    const dir = tempDir();
    const store = openSqliteStore(dir, { groupValuesPerDay });
    try {
      await stored(store);
      const before = await overview(store);
      expect(environmentRows(dir).length).toBeGreaterThan(10);
      // The traces gone from under the store: what still answers came from the roll-ups.
      expect(deleteTraces(dir)).toBe(traces.length);
      const user = await store.usageTotals("acc_a", create(TraceFilterSchema, { ...range, userId: "u" }));
      expect(user.calls).toBe(0n);
      // Each day's third environment was counted under other: those days are read from the traces, now empty.
      const after = await overview(store);
      const production = (answers: unknown[]) => answers.slice(0, before.length / environments.length);
      expect(production(after)).toEqual(production(before));
      expect(after).not.toEqual(before);
    } finally {
      await store.close();
    }
  });

  it("back-fills a store written before it: the same rows and answers as the writer's", async () => {
    await withUpgradedStore(
      (dir) => openSqliteStore(dir, { groupValuesPerDay }),
      traces,
      // The store as the release before left it: every other table as its writer kept them. Its
      // traces named a provider and a model by text (D68 numbers them; its migration runs again on reopening).
      (dir) =>
        rollBackBefore(
          dir,
          "usage_environment_daily",
          ["usage_environment_daily", "usage_hourly", "latency_environment_daily", "runs_pending"],
          `ALTER TABLE traces ADD COLUMN provider TEXT;
          ALTER TABLE traces ADD COLUMN model TEXT;
          UPDATE traces SET provider = (SELECT id FROM id_numbers WHERE num = provider_num), model = (SELECT id FROM id_numbers WHERE num = model_num);`,
        ),
      async ({ upgraded, upgradedDir, written, writtenDir }) => {
        expect(rounded(environmentRows(upgradedDir))).toEqual(rounded(environmentRows(writtenDir)));
        expect(rounded(await overview(upgraded))).toEqual(rounded(await overview(written)));
      },
    );
  });
});
