import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { StoredTraceSchema } from "../../gen/calltrace/v1/trace_pb.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { runCli, runCliRaw } from "../support/cli.js";
import { tempDir } from "../support/temp-dir.js";

const day = 86_400_000;

/** A data directory whose store holds `calls` traces of each [provider, model, days ago]. */
async function storeWith(traces: [string, string, number, number][]): Promise<string> {
  const dataDir = tempDir();
  const store = openSqliteStore(dataDir);
  const now = Date.now();
  const writes = traces.flatMap(([provider, model, daysAgo, calls]) =>
    Array.from({ length: calls }, (_, i) => ({
      trace: create(StoredTraceSchema, {
        receivedAt: timestampFromMs(now - daysAgo * day - i),
        keyId: "key_a",
        accountId: `acc_${i % 2}`,
        provider,
        model,
        tokensIn: 10,
        tokensOut: 10,
        latencyMs: 100,
        status: "success",
      }),
      idempotencyKey: undefined,
    })),
  );
  await store.writeBatch(writes);
  await store.close();
  return dataDir;
}

describe("calltrace prices check", () => {
  it("lists the models of the last 30 days that the price table does not know, most calls first, over every account", async () => {
    const dataDir = await storeWith([
      ["openai", "gpt-4o-2024-08-06", 1, 5], // priced (a dated gpt-4o)
      ["openai", "gpt-5.1-codex-micro", 2, 3], // unknown: no prefix guess
      ["anthropic", "claude-opus-9", 0, 4],
      ["gemini", "gemini-1.0-ultra", 40, 7], // unknown, but older than 30 days
    ]);
    expect(JSON.parse(runCli(["prices", "check", "--json", "--data-dir", dataDir]))).toEqual([
      { provider: "anthropic", model: "claude-opus-9", calls: 4 },
      { provider: "openai", model: "gpt-5.1-codex-micro", calls: 3 },
    ]);
    expect(JSON.parse(runCli(["prices", "check", "--days", "60", "--json", "--data-dir", dataDir]))[0]).toEqual({
      provider: "gemini",
      model: "gemini-1.0-ultra",
      calls: 7,
    });
    const table = runCli(["prices", "check", "--data-dir", dataDir]);
    expect(table.split("\n")[1]).toMatch(/^anthropic\/claude-opus-9\s+4$/);
  });

  it("says so when every model is priced, and refuses bad arguments with exit 2", async () => {
    const dataDir = await storeWith([["gemini", "models/gemini-2.5-flash", 3, 2]]);
    expect(runCli(["prices", "check", "--data-dir", dataDir])).toBe("every model seen in the last 30 days is in the price table\n");
    const bad = runCliRaw(["prices", "check", "--days", "0", "--data-dir", dataDir]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("--days must be a whole number of days");
    expect(runCliRaw(["prices", "list", "--data-dir", dataDir]).stderr).toContain("prices needs: check");
  });
});
