import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Readable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { StoredTraceSchema } from "../../gen/calltrace/v1/trace_pb.js";
import { downloadLines } from "../../src/download/trace-lines.js";
import { csvItems } from "../../src/import/export-files.js";
import type { ImportContext, ImportItem } from "../../src/import/import-item.js";
import { importChunkSize, importTraces } from "../../src/import/trace-import.js";
import { PriceBook } from "../../src/pricing/price-match.js";
import { commitTracesMax } from "../../src/store/sqlite/sqlite-batch-commit.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import type { TraceWrite } from "../../src/store/trace-store.js";
import { tempDir } from "../support/temp-dir.js";

/** How `traces import` hands traces to the embedded store's writer (D74): read ahead of the commits, commits capped, nothing lost. */
const now = Date.now();
const opened: Store[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
});

function store(): Store {
  const opening = openSqliteStore(tempDir());
  opened.push(opening);
  return opening;
}

async function stored(target: Store): Promise<number> {
  let n = 0;
  for await (const _ of target.exportTraces({ accountId: "prj_1" })) n++;
  return n;
}

function write(i: number): TraceWrite {
  const trace = create(StoredTraceSchema, {
    receivedAt: timestampFromMs(now - 3_600_000 + i),
    keyId: "key_1",
    accountId: "prj_1",
    provider: "openai",
    model: "gpt-4o-mini",
    tokensIn: 10,
    tokensOut: 5,
    latencyMs: 100 + (i % 50),
    costUsd: 0.001,
    status: "success",
    userId: `user-${i % 97}`,
  });
  return { trace, idempotencyKey: undefined, importKey: `id:${i}` };
}

async function* items(n: number): AsyncGenerator<ImportItem> {
  for (let i = 0; i < n; i++) yield { where: `line ${i + 1}`, write: write(i) };
}

const failOnRejection = (r: { where: string; reason: string }) => {
  throw new Error(`${r.where}: ${r.reason}`);
};

describe("traces import into the embedded store", () => {
  it("hands the next traces over while the first are still being committed, and stores each once", async () => {
    const target = store();
    const events: string[] = [];
    let handedOver = 0;
    const watched = {
      writeBatch: (writes: TraceWrite[]) => {
        const n = ++handedOver;
        events.push(`hand-over ${n} of ${writes.length}`);
        return target.writeBatch(writes).then((outcomes) => {
          events.push(`stored ${n}`);
          return outcomes;
        });
      },
    };
    const total = 2 * importChunkSize + 1234;
    const counts = await importTraces(items(total), watched, failOnRejection);
    expect(counts).toEqual({ read: total, stored: total, duplicates: 0, rejected: 0 });
    expect(events.slice(0, 3)).toEqual([`hand-over 1 of ${importChunkSize}`, `hand-over 2 of ${importChunkSize}`, "hand-over 3 of 1234"]);
    expect(await stored(target)).toBe(total);
    const again = await importTraces(items(total), target, failOnRejection);
    expect(again).toEqual({ read: total, stored: 0, duplicates: total, rejected: 0 });
  });

  it("stores every trace when more than one commit's worth is queued at once", async () => {
    const target = store();
    const handOvers = Math.ceil((commitTracesMax * 1.3) / importChunkSize);
    const all = Array.from({ length: handOvers * importChunkSize }, (_, i) => write(i));
    const outcomes = await Promise.all(
      Array.from({ length: handOvers }, (_, h) => target.writeBatch(all.slice(h * importChunkSize, (h + 1) * importChunkSize))),
    );
    expect(outcomes.flat().every((o) => o.kind === "stored")).toBe(true);
    expect(await stored(target)).toBe(all.length);
  });
});

describe("CSV rows", () => {
  const context: ImportContext = {
    projectId: "prj_1",
    keepDays: 90,
    nowMs: now,
    book: new PriceBook([]),
    metadataAttributes: [],
    fastExportedRows: true,
  };

  it("are read by their header's columns, and named by the line they end on, past cells that span lines", async () => {
    async function* exported() {
      const failed = write(1).trace;
      yield { ...write(0).trace, id: "a" };
      yield { ...failed, id: "b", status: "error", error: "upstream said:\nline two\nline three" };
      yield { ...write(2).trace, id: "c", tokensIn: -5 };
    }
    let text = "";
    for await (const line of downloadLines(exported(), "csv")) text += line;
    const read: ImportItem[] = [];
    for await (const item of csvItems(Readable.from([text]), context)) read.push(item);
    expect(read.map((item) => item.where)).toEqual(["line 2", "line 5", "line 6"]);
    expect(read[0]).toMatchObject({ write: { importKey: "id:a", trace: { tokensIn: 10, userId: "user-0" } } });
    expect(read[1]).toMatchObject({ write: { trace: { error: "upstream said:\nline two\nline three" } } });
    expect(read[2]).toMatchObject({ rejected: expect.stringContaining("tokens_in") });
  });
});
