import { createReadStream, statSync } from "node:fs";
import { extname } from "node:path";
import type { Readable } from "node:stream";
import type { Config } from "../config/config.js";
import { loadPlans } from "../config/plans.js";
import { keptDays } from "../ingest/call-time.js";
import { csvItems, jsonLinesItems } from "../import/export-files.js";
import { type ForeignSource, foreignItems, foreignSources } from "../import/foreign-files.js";
import type { ImportContext, ImportItem } from "../import/import-item.js";
import { type IndexDeferral, bytesPerTrace, indexDeferrals, withIndexesDeferred } from "../import/deferred-indexes.js";
import { ImportProgress, summary } from "../import/import-progress.js";
import { otlpFileItems } from "../import/otlp-file.js";
import { type ImportCounts, importTraces, type Rejection } from "../import/trace-import.js";
import { metadataAttributeNames } from "../otlp/call-attribution.js";
import { projectPrices } from "../pricing/project-prices.js";
import type { Store } from "../store/store.js";
import { keyProject } from "./keys-command.js";
import { UsageError } from "./usage-error.js";

export type ImportFormat = "jsonl" | "csv" | "otlp";
const formats: readonly ImportFormat[] = ["jsonl", "csv", "otlp"];

export interface ImportOptions {
  files: string[];
  project?: string | undefined;
  plan?: string | undefined;
  format?: string | undefined;
  /** Another tool's export: langfuse or helicone. */
  from?: string | undefined;
  json?: boolean | undefined;
  /** auto, on or off: build the traces' scattered indexes, and sum the runs, after the rows (D77, D81). */
  deferIndexes?: string | undefined;
}

/**
 * `calltrace traces import FILE…`: the JSONL and CSV that `traces export` writes, and OTLP JSON
 * files, into a project (docs/import.md). Prints a report with the counts and every rejected
 * trace; exits 1 when any was rejected.
 */
export async function importCommand(store: Store, config: Config, options: ImportOptions): Promise<void> {
  if (options.files.length === 0) throw new UsageError("traces import needs one or more files");
  if (options.format !== undefined && !formats.includes(options.format as ImportFormat)) {
    throw new UsageError(`--format must be one of ${formats.join(", ")}`);
  }
  if (options.from !== undefined && !foreignSources.includes(options.from)) {
    throw new UsageError(`--from must be one of ${foreignSources.join(", ")}`);
  }
  const deferral = (options.deferIndexes ?? "auto") as IndexDeferral;
  if (!indexDeferrals.includes(deferral)) throw new UsageError(`--defer-indexes must be one of ${indexDeferrals.join(", ")}`);
  const files = options.files.map((file) => ({ file, format: (options.format as ImportFormat | undefined) ?? (options.from ? "jsonl" : formatOf(file)) }));
  const project = await keyProject(store, loadPlans(config.plansFile), options.project, options.plan, "traces import");
  const context: ImportContext = {
    projectId: project.id,
    keepDays: keptDays(config.retentionDays, project.retentionDays),
    nowMs: Date.now(),
    book: await projectPrices(store.prices).book(project.id),
    metadataAttributes: metadataAttributeNames(config.otlpMetadataAttributes),
    fastExportedRows: config.importFastPath,
  };
  const progress = new ImportProgress(process.stderr);
  const total: ImportCounts = { read: 0, stored: 0, duplicates: 0, rejected: 0 };
  const rejections: (Rejection & { file: string })[] = [];
  const traces = files.reduce((sum, { file }) => sum + statSync(file).size, 0) / bytesPerTrace;
  await withIndexesDeferred(store, deferral, traces, (line) => progress.note(line), async () => {
    for (const { file, format } of files) {
      progress.startFile(file);
      const size = Math.max(1, statSync(file).size);
      const input = createReadStream(file);
      const items = options.from ? foreignItems(file, options.from as ForeignSource, context) : itemsOf(format, file, input, context, store);
      const before = { ...total };
      const counts = await importTraces(
        items,
        store,
        (rejection) => rejections.push({ file, ...rejection }),
        (counts) => progress.update(added(before, counts), input.bytesRead / size),
      );
      input.destroy();
      Object.assign(total, added(before, counts));
    }
  });
  progress.finish();
  if (options.json) {
    console.log(JSON.stringify({ project: project.id, ...total, rejections }));
  } else {
    console.log(`imported into project ${project.id}: ${summary(total)} (${progress.rate(total)})`);
    for (const r of rejections) console.log(`rejected ${r.file} ${r.where}: ${r.reason}`);
  }
  if (total.rejected > 0) process.exitCode = 1;
}

/** By the file's extension: .jsonl or .ndjson, .csv, .json (OTLP). */
function formatOf(file: string): ImportFormat {
  switch (extname(file).toLowerCase()) {
    case ".jsonl":
    case ".ndjson":
      return "jsonl";
    case ".csv":
      return "csv";
    case ".json":
      return "otlp";
    default:
      throw new UsageError(`cannot tell the format of ${file} from its name; say --format ${formats.join("|")}`);
  }
}

function itemsOf(format: ImportFormat, file: string, input: Readable, context: ImportContext, store: Store): AsyncIterable<ImportItem> {
  switch (format) {
    case "jsonl":
      return jsonLinesItems(input, context);
    case "csv":
      return csvItems(input, context);
    case "otlp":
      return otlpFileItems(file, context, (traceIds) => store.otlpSpans(context.projectId, traceIds));
  }
}

function added(a: ImportCounts, b: ImportCounts): ImportCounts {
  return { read: a.read + b.read, stored: a.stored + b.stored, duplicates: a.duplicates + b.duplicates, rejected: a.rejected + b.rejected };
}
