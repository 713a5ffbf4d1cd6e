import { toJson } from "@bufbuild/protobuf";
import { StoredTraceSchema, type StoredTrace } from "../../gen/calltrace/v1/trace_pb.js";

export type DownloadFormat = "jsonl" | "csv";

/** One trace as a plain JSON object with the contract's snake_case names; every field present. */
export function traceJson(trace: StoredTrace): Record<string, unknown> {
  return toJson(StoredTraceSchema, trace, { useProtoFieldName: true, alwaysEmitImplicit: true }) as Record<string, unknown>;
}

const columns = StoredTraceSchema.fields.map((f) => f.name);

/** Writes traces as JSON lines or as CSV (header row first), line by line. */
export async function* downloadLines(traces: AsyncIterable<StoredTrace>, format: DownloadFormat): AsyncGenerator<string> {
  if (format === "csv") yield columns.join(",") + "\n";
  for await (const trace of traces) {
    const json = traceJson(trace);
    yield format === "jsonl" ? JSON.stringify(json) + "\n" : columns.map((c) => csvCell(json[c])).join(",") + "\n";
  }
}

/**
 * What a spreadsheet may run as a formula (CSV injection): a cell starting with = + - @ (or their
 * full-width forms, which some spreadsheets fold), also after leading spaces or control
 * characters, which some trim; and a cell starting with a tab or a line break.
 */
export const formulaLike = /^[\t\r\n]|^[\s\p{Cc}]*[=+\-@\uff1d\uff0b\uff0d\uff20]/u;

/** RFC 4180 quoting, plus a leading apostrophe on text that a spreadsheet would run as a formula. */
export function csvCell(value: unknown): string {
  if (value === undefined || value === null) return "";
  // Tags and metadata: their JSON, so a list or map reads back whole.
  let text = typeof value === "object" ? JSON.stringify(value) : typeof value === "number" ? plainDecimal(value) : String(value);
  if (typeof value === "string" && formulaLike.test(text)) text = `'${text}`;
  return /[",\r\n']/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** A number as a spreadsheet reads it everywhere: plain decimals, never exponent notation (4e-7 is 0.0000004). */
export function plainDecimal(n: number): string {
  const m = /^(-?)(\d+)(?:\.(\d+))?e([+-]\d+)$/.exec(String(n));
  if (!m) return String(n);
  const [, sign, whole, fraction = "", exponent] = m;
  const digits = whole! + fraction;
  const point = whole!.length + Number(exponent);
  if (point <= 0) return `${sign}0.${"0".repeat(-point)}${digits}`;
  if (point >= digits.length) return sign + digits + "0".repeat(point - digits.length);
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}
