// `calltrace traces import` into the embedded store (src/import/), in process: a JSONL and a CSV
// export of N traces imported into fresh stores, against a baseline measured in the same run:
// the same traces handed to the store's batch path already built (what the import adds is
// reading, checking and converting the file). `BENCH_ONLY=import npm run bench`.
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { createReadStream, createWriteStream } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { once } from "node:events";
import { StoredTraceSchema, type StoredTrace } from "../gen/calltrace/v1/trace_pb.js";
import { downloadLines } from "../src/download/trace-lines.js";
import { csvItems, jsonLinesItems } from "../src/import/export-files.js";
import type { ImportContext } from "../src/import/import-item.js";
import { importBatchSize, importTraces } from "../src/import/trace-import.js";
import { PriceBook } from "../src/pricing/price-match.js";
import { openSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { tempDir } from "../test/support/temp-dir.js";
import { machineLine, table, writeResultsSection } from "./support/results.js";

const n = Number(process.env.BENCH_IMPORT_TRACES ?? 50_000);
const day = 86_400_000;
const models = ["gpt-4o-2024-08-06", "gpt-4o-mini", "claude-sonnet-4-5", "gemini-2.5-flash"];

function trace(i: number): StoredTrace {
  const receivedAt = Date.now() - (i % 20) * day - (i % 1000) * 1000;
  return create(StoredTraceSchema, {
    receivedAt: timestampFromMs(receivedAt),
    ...(i % 2 === 0 ? { calledAt: timestampFromMs(receivedAt - 1500) } : {}),
    keyId: "key_bench",
    accountId: "prj_source",
    country: "DE",
    provider: i % 4 === 2 ? "anthropic" : i % 4 === 3 ? "gemini" : "openai",
    model: models[i % 4]!,
    tokensIn: 1000 + (i % 500),
    tokensOut: 100 + (i % 50),
    latencyMs: 200 + (i % 2000),
    costUsd: 0.001 + (i % 7) / 1000,
    status: i % 20 === 0 ? "error" : "success",
    ...(i % 20 === 0 ? { error: "rate limited" } : {}),
    userId: `user-${i % 500}`,
    tags: ["search"],
    metadata: { feature: `f${i % 6}` },
    environment: "production",
  });
}

async function writeFileOf(store: ReturnType<typeof openSqliteStore>, format: "jsonl" | "csv", path: string): Promise<void> {
  const out = createWriteStream(path);
  for await (const line of downloadLines(store.exportTraces({}), format)) if (!out.write(line)) await once(out, "drain");
  out.end();
  await once(out, "finish");
}

const work = tempDir();
const source = openSqliteStore(join(work, "source"));
for (let i = 0; i < n; i += importBatchSize) {
  await source.writeBatch(Array.from({ length: Math.min(importBatchSize, n - i) }, (_, k) => ({ trace: trace(i + k), idempotencyKey: undefined })));
}
const jsonl = join(work, "traces.jsonl");
const csv = join(work, "traces.csv");
await writeFileOf(source, "jsonl", jsonl);
await writeFileOf(source, "csv", csv);
const exported: StoredTrace[] = [];
for await (const t of source.exportTraces({})) exported.push(t);
await source.close();

const context = (projectId: string): ImportContext => ({ projectId, keepDays: 90, nowMs: Date.now(), book: new PriceBook([]), metadataAttributes: [] });

/** Traces per second of `run` into a fresh store. */
async function rate(name: string, run: (store: ReturnType<typeof openSqliteStore>) => Promise<number>): Promise<number> {
  const store = openSqliteStore(join(work, name));
  const started = performance.now();
  const stored = await run(store);
  const seconds = (performance.now() - started) / 1000;
  await store.close();
  if (stored !== n) throw new Error(`${name}: stored ${stored} of ${n}`);
  return n / seconds;
}

const baseline = await rate("baseline", async (store) => {
  let stored = 0;
  for (let i = 0; i < n; i += importBatchSize) {
    const writes = exported.slice(i, i + importBatchSize).map((t, k) => ({ trace: { ...t, accountId: "prj_b" }, idempotencyKey: undefined, importKey: `id:${i + k}` }));
    stored += (await store.writeBatch(writes)).filter((o) => o.kind === "stored").length;
  }
  return stored;
});
const fromJsonl = await rate("jsonl", async (store) => (await importTraces(jsonLinesItems(createReadStream(jsonl), context("prj_j")), store, () => {})).stored);
const fromCsv = await rate("csv", async (store) => (await importTraces(csvItems(createReadStream(csv), context("prj_c")), store, () => {})).stored);

const fmt = (x: number) => Math.round(x).toLocaleString("en-US");
writeResultsSection(
  "import",
  `## \`traces import\` into the embedded store (\`BENCH_ONLY=import npm run bench\`, bench/import.ts)

${machineLine()}; ${n.toLocaleString("en-US")} traces (4 models, 500 users, metadata, half with a call time) per run, each into a fresh store, in process; load average ${loadavg()[0]!.toFixed(1)} on 2 cores shared with other work (compare the ratios, not the rates).

${table(
  ["run", "traces/s", "ratio to baseline"],
  [
    ["baseline: the same traces, already built, through the store's batch path (batches of 2,000)", fmt(baseline), "1.00"],
    ["import of the JSONL export (read, checked by the API's rules, converted, written)", fmt(fromJsonl), (fromJsonl / baseline).toFixed(2)],
    ["import of the CSV export", fmt(fromCsv), (fromCsv / baseline).toFixed(2)],
  ],
)}

The import writes through the store's batch path, not over HTTP; the target is at least 20,000 traces/s.`,
);
console.log({ baseline, fromJsonl, fromCsv });
