import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import type { StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";
import { TraceFilterSchema } from "../../gen/calltrace/v1/query_pb.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { call } from "../support/stored-call.js";
import { tableRows } from "../support/rollup-checks.js";
import { countInStoreFile } from "../support/store-file.js";
import { tempDir } from "../support/temp-dir.js";

/** The runs a large import sums after its rows (D81), against the same traces counted as they come. */
const day = 86_400_000;
const now = Date.now();
const at = (hoursAgo: number) => now - hoursAgo * 3_600_000;
const otlp = (traceId: string) => ({ otlpTraceId: traceId, otlpSpanId: `${traceId.slice(0, 15)}1`, serviceName: "svc" });

/** Calls stored before the import: a session's and an OTLP trace's first calls, and one of no run. */
const before: StoredTrace[] = [
  call({ at: at(30), sessionId: "s-1", costUsd: 0.25, latencyMs: 900 }),
  call({ at: at(29), ...otlp("a".repeat(32)), costUsd: 0.5 }),
  call({ at: at(28) }),
];
/** The import, in two hand-overs: more calls of those runs (one earlier, one failed), new runs, a call naming both. */
const imported: StoredTrace[][] = [
  [
    call({ at: at(40), sessionId: "s-1", costUsd: 0.125, latencyMs: 4000, tokensIn: 7 }),
    call({ at: at(20), sessionId: "s-2", status: "error", error: "upstream 500", costUsd: 0.75 }),
    call({ at: at(19), ...otlp("a".repeat(32)), sessionId: "s-2", tokensOut: 900 }),
    call({ at: at(18) }),
  ],
  [
    call({ at: at(10), sessionId: "s-2", costUsd: 1.5, calledAt: timestampFromMs(at(12)), latencyMs: 60_000 }),
    call({ at: at(9), ...otlp("b".repeat(32)), costUsd: 0.0625 }),
    call({ at: at(8), sessionId: "s-1", status: "error", error: "timeout", accountId: "acc_b" }),
  ],
];
/** Written meanwhile by another store on the same file (a server beside the import), which counts its own runs. */
const live: StoredTrace[] = [call({ at: at(15), sessionId: "s-2", costUsd: 2 }), call({ at: at(14), sessionId: "s-3" })];

const write = (store: Store, traces: StoredTrace[]) => store.writeBatch(traces.map((trace) => ({ trace, idempotencyKey: undefined })));
const filter = create(TraceFilterSchema, { since: timestampFromMs(now - 3 * day), until: timestampFromMs(now + day) });
const runsOf = async (store: Store) => ({
  a: await store.listRuns("acc_a", filter, "recent", 100),
  b: await store.listRuns("acc_b", filter, "cost", 100),
});

/** The runs table's rows, read on a connection of its own. */
const runsTable = (dir: string) => tableRows(dir, "SELECT * FROM runs ORDER BY project_num, otlp, run_key");
/** Commits whose runs an import left to after its rows. */
const pendingNotes = (dir: string) => countInStoreFile(dir, "SELECT COUNT(*) FROM runs_pending");

describe("the runs roll-up of a large import, summed after its rows (D81)", () => {
  it("lacks the import's calls while it runs, and afterwards equals the runs of the same traces counted as they came", async () => {
    const cleanDir = tempDir();
    const clean = openSqliteStore(cleanDir);
    const dir = tempDir();
    const store = openSqliteStore(dir);
    const server = openSqliteStore(dir);
    try {
      await write(clean, before);
      await write(clean, imported[0]!);
      await write(clean, live);
      await write(clean, imported[1]!);

      await write(store, before);
      const beforeImport = await runsOf(store);
      store.deferrableIndexes!.drop();
      await write(store, imported[0]!);
      await write(server, live);
      await write(store, imported[1]!);
      expect(pendingNotes(dir)).toBe(2);
      // Another store this process opens meanwhile leaves them to the import (a killed import's: test/cli/traces-import-deferred.test.ts).
      await openSqliteStore(dir).close();
      expect(pendingNotes(dir)).toBe(2);
      // The import's calls are not in the runs yet: only the server's are.
      const during = await runsOf(store);
      expect(during.a.find((run) => run.id === "session:s-1")).toEqual(beforeImport.a.find((run) => run.id === "session:s-1"));
      expect(during.a.map((run) => run.id).sort()).toEqual(["otlp:" + "a".repeat(32), "session:s-1", "session:s-2", "session:s-3"]);
      expect(during.b).toEqual([]);

      const built: string[] = [];
      store.deferrableIndexes!.rebuild((what) => built.push(what));
      expect(built).toContain("the runs roll-up");
      expect(pendingNotes(dir)).toBe(0);
      const after = await runsOf(store);
      expect(after.a.map((run) => run.id).sort()).toEqual(
        ["otlp:" + "a".repeat(32), "otlp:" + "b".repeat(32), "session:s-1", "session:s-2", "session:s-3"].sort(),
      );
      expect(after).toEqual(await runsOf(clean));
      expect(runsTable(dir)).toEqual(runsTable(cleanDir));

      // A later import's writes count their runs as they come again.
      await write(store, [call({ at: at(1), sessionId: "s-9" })]);
      expect(pendingNotes(dir)).toBe(0);
      expect((await runsOf(store)).a.map((run) => run.id)).toContain("session:s-9");
    } finally {
      await Promise.all([clean.close(), store.close(), server.close()]);
    }
  });
});
