import type { PriceBook } from "../pricing/price-match.js";
import type { TraceWrite } from "../store/trace-store.js";

/** What every reader needs to know of the import it reads for. */
export interface ImportContext {
  projectId: string;
  /** Days the project keeps traces (0: forever): how old a trace may be (D58). */
  keepDays: number;
  /** When the import started: the receipt of traces whose file has none, and the clock the bounds are checked against. */
  nowMs: number;
  /** The project's custom prices, for traces the server prices (OTLP, Langfuse, Helicone). */
  book: PriceBook;
  /** Span attributes kept as metadata (OTLP_METADATA_ATTRIBUTES). */
  metadataAttributes: readonly string[];
  /** Whether exported rows (JSONL, CSV) are read on the fast path (IMPORT_FAST_PATH; exported-row.ts). */
  fastExportedRows: boolean;
}

/** The key id imported traces carry where their file names no key of this service (OTLP, Langfuse, Helicone). */
export const importKeyId = "import";

/** Stands in for `api_key` when an imported trace is checked by the API's rules: a file carries no key. */
export const apiKeyStandIn = "ct_import";

/** One trace of a file, or why it cannot be imported; `where` says where it is (`line 12`, `span 5f0c…`). */
export type ImportItem = { where: string; write: TraceWrite } | { where: string; rejected: string };
