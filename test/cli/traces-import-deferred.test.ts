import { create } from "@bufbuild/protobuf";
import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { deferrableTraceIndexes } from "../../src/store/sqlite/sqlite-schema.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { calltraceBin, repoRoot, runCli, runCliRaw, startServiceProcess } from "../support/cli.js";
import { countInStoreFile, presentDeferrable } from "../support/store-file.js";
import { tempDir } from "../support/temp-dir.js";
import { postTrace, traceBody } from "../support/test-service.js";

/** `traces import --defer-indexes` (D77, D81): killed mid-import, resumed, and beside a running server. */
const day = 86_400_000;
const traces = 40_000;
const all = Object.keys(deferrableTraceIndexes).sort();

/** An export of `traces` traces over ten days, with users, sessions, costs and latencies all over their indexes. */
function exportFile(dir: string): string {
  const file = join(dir, "export.jsonl");
  const now = Date.now();
  const lines: string[] = [];
  for (let i = 0; i < traces; i++) {
    const at = new Date(now - 10 * day + Math.floor((i / traces) * 10 * day)).toISOString();
    lines.push(
      JSON.stringify({
        id: `tr_seed_${i}`,
        received_at: at,
        key_id: "key_seed",
        account_id: "prj_seed",
        country: "NL",
        provider: "openai",
        model: i % 3 === 0 ? "gpt-4o-mini" : "gpt-4o-2024-08-06",
        tokens_in: 100 + ((i * 7919) % 5000),
        tokens_out: 10 + ((i * 104729) % 900),
        latency_ms: 50 + ((i * 7727) % 4000),
        cost_usd: ((i * 6007) % 10_000) / 1_000_000,
        status: i % 17 === 0 ? "error" : "success",
        ...(i % 17 === 0 ? { error: "upstream 500" } : {}),
        user_id: `user-${(i * 31) % 2000}`,
        session_id: `s-${(i * 131) % 9000}`,
        tags: ["seed"],
        metadata: { feature: `f${i % 5}` },
        environment: "production",
      }),
    );
  }
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

/** Commits whose runs the import left to after its rows (D81). */
const pendingRunNotes = (dir: string) => countInStoreFile(dir, "SELECT COUNT(*) FROM runs_pending");
const storedTraces = (dir: string) => countInStoreFile(dir, "SELECT COUNT(*) FROM traces");

/** What the dashboard reads through the deferrable indexes (by user, session, cost, latency and tokens) and the runs roll-up. */
async function figures(store: Store, project: string) {
  const filter = create(TraceFilterSchema, { since: { seconds: BigInt(Math.floor((Date.now() - 30 * day) / 1000)) } });
  const page = async (order: "cost" | "latency" | "tokens", f = filter) =>
    (await store.listTraces(project, f, { pageSize: 50, sort: { order, ascending: false } })).traces.map(
      ({ id, accountId, ...rest }) => rest,
    );
  return JSON.parse(
    JSON.stringify(
      {
        totals: await store.usageTotals(project, filter),
        users: await store.usageByGroup(project, filter, { kind: "user" }, 100),
        sessions: await store.usageByGroup(project, filter, { kind: "session" }, 100),
        byCost: await page("cost"),
        byLatency: await page("latency"),
        byTokens: await page("tokens"),
        oneUser: await page("cost", create(TraceFilterSchema, { ...filter, userId: "user-7" })),
        // The runs roll-up, summed after the rows when deferred (D81).
        recentRuns: await store.listRuns(project, filter, "recent", 100),
        dearestRuns: await store.listRuns(project, filter, "cost", 100),
      },
      (_key, value: unknown) =>
        typeof value === "bigint"
          ? String(value)
          : typeof value === "number" && !Number.isInteger(value)
            ? Number(value.toPrecision(12))
            : value,
    ),
  ) as unknown;
}

interface Report {
  project: string;
  read: number;
  stored: number;
  duplicates: number;
  rejected: number;
}

function importAll(dir: string, file: string, ...flags: string[]): Report {
  const run = runCliRaw(["traces", "import", file, "--json", ...flags], { DATA_DIR: dir });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as Report;
}

async function openedFigures(dir: string, project: string) {
  const store = openSqliteStore(dir);
  try {
    return await figures(store, project);
  } finally {
    await store.close();
  }
}

/** Starts `calltrace traces import` as a child process; resolves `exited` with its exit code or signal. */
function startImport(dir: string, file: string, ...flags: string[]) {
  const child = spawn(process.execPath, [calltraceBin, "traces", "import", file, "--json", ...flags], {
    cwd: repoRoot,
    env: { ...process.env, DATA_DIR: dir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  let stdout = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  const exited = new Promise<number | NodeJS.Signals>((resolve) => child.on("exit", (code, signal) => resolve(signal ?? code ?? 0)));
  return { child, exited, stderr: () => stderr, stdout: () => stdout };
}

async function until(condition: () => boolean, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("traces import with its indexes built after the rows (D77)", () => {
  it("killed with SIGKILL mid-import leaves a store whose next open builds every index; resumed, its figures equal a clean import's, and again it stores nothing", {
    timeout: 300_000,
  }, async () => {
    const work = tempDir();
    const file = exportFile(work);
    const clean = tempDir();
    const cleanReport = importAll(clean, file, "--plan", "pro", "--defer-indexes", "off");
    expect(cleanReport).toMatchObject({ read: traces, stored: traces, rejected: 0 });

    const dir = tempDir();
    const killed = startImport(dir, file, "--plan", "pro", "--defer-indexes", "on");
    await until(() => killed.stderr().includes("building 5 indexes after the rows"), "the import to drop its indexes");
    await until(() => storedTraces(dir) > 0, "a first commit");
    killed.child.kill("SIGKILL");
    expect(await killed.exited).toBe("SIGKILL");
    const storedBefore = storedTraces(dir);
    expect(storedBefore).toBeGreaterThan(0);
    expect(storedBefore).toBeLessThan(traces);
    expect(presentDeferrable(dir)).toEqual([]);
    expect(pendingRunNotes(dir)).toBeGreaterThan(0);
    expect(existsSync(join(dir, "calltrace.db-import"))).toBe(true);

    await openSqliteStore(dir).close();
    expect(presentDeferrable(dir)).toEqual(all);
    expect(pendingRunNotes(dir)).toBe(0);
    expect(existsSync(join(dir, "calltrace.db-import"))).toBe(false);

    const resumed = importAll(dir, file, "--plan", "pro");
    expect(resumed).toMatchObject({ read: traces, stored: traces - storedBefore, duplicates: storedBefore, rejected: 0 });
    expect(await openedFigures(dir, resumed.project)).toEqual(await openedFigures(clean, cleanReport.project));
    expect(importAll(dir, file, "--plan", "pro", "--defer-indexes", "on")).toMatchObject({ read: traces, stored: 0, duplicates: traces });
    expect(presentDeferrable(dir)).toEqual(all);
  });

  it("runs beside `calltrace serve` on the same data directory: the server answers and stores traces throughout, and the import ends with every index", {
    timeout: 300_000,
  }, async () => {
    const work = tempDir();
    const file = exportFile(work);
    const dir = tempDir();
    const created = JSON.parse(runCli(["keys", "create", "--plan", "pro", "--json"], { DATA_DIR: dir })) as {
      key: string;
      project: string;
    };
    const service = await startServiceProcess([], { DATA_DIR: dir });
    const importing = startImport(dir, file, "--project", created.project, "--defer-indexes", "on");
    await until(() => importing.stderr().includes("building 5 indexes after the rows"), "the import to drop its indexes");
    let posted = 0;
    while (importing.child.exitCode === null) {
      const response = await postTrace(service.url, traceBody(created.key, { user_id: `live-${posted}`, cost_usd: 0.5 }), {
        key: created.key,
      });
      expect(response.status).toBe(202);
      posted++;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await importing.exited, importing.stderr()).toBe(0);
    expect(importing.stderr()).toMatch(/built index traces_account_cost in \d+\.\d s/);
    expect(importing.stderr()).toMatch(/built the runs roll-up in \d+\.\d s/);
    expect(JSON.parse(importing.stdout())).toMatchObject({ read: traces, stored: traces, rejected: 0 });
    expect(posted).toBeGreaterThan(0);
    expect(presentDeferrable(dir)).toEqual(all);
    const store = openSqliteStore(dir);
    try {
      const filter = create(TraceFilterSchema, { since: { seconds: BigInt(Math.floor((Date.now() - 30 * day) / 1000)) } });
      expect(Number((await store.usageTotals(created.project, filter)).calls)).toBe(traces + posted);
      const dearest = await store.listTraces(created.project, filter, { pageSize: posted, sort: { order: "cost", ascending: false } });
      expect(dearest.traces.map((t) => t.userId).sort()).toEqual(Array.from({ length: posted }, (_, i) => `live-${i}`).sort());
    } finally {
      await store.close();
    }
    service.child.kill("SIGTERM");
    await service.exited;
  });
});
