import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { type DescField, type JsonObject, ScalarType } from "@bufbuild/protobuf";
import { parse } from "csv-parse";
import { StoredTraceSchema } from "../../gen/calltrace/v1/trace_pb.js";
import { formulaLike } from "../download/trace-lines.js";
import { exportedRowWrite } from "./exported-row.js";
import type { ImportContext, ImportItem } from "./import-item.js";

/** The traces of a JSON Lines file as `traces export` writes it; blank lines are skipped. */
export async function* jsonLinesItems(input: Readable, context: ImportContext): AsyncGenerator<ImportItem> {
  let line = 0;
  for await (const text of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
    line++;
    if (text.trim() === "") continue;
    const where = `line ${line}`;
    let row: unknown;
    try {
      row = JSON.parse(text);
    } catch (error) {
      yield { where, rejected: `not JSON: ${(error as Error).message}` };
      continue;
    }
    if (typeof row !== "object" || row === null || Array.isArray(row)) {
      yield { where, rejected: "not a JSON object" };
      continue;
    }
    yield item(where, exportedRowWrite(row as JsonObject, context));
  }
}

/**
 * The traces of a CSV file as `traces export --format csv` writes it: a header row of StoredTrace's
 * field names, then one row per trace. Rows are read as arrays, each cell read by its column's
 * field found once from the header (csv-parse's `columns` builds an object per row: about a third
 * of its time, bench/RESULTS.md); csv-parse still refuses a row of another length than the header.
 */
export async function* csvItems(input: Readable, context: ImportContext): AsyncGenerator<ImportItem> {
  const parser = input.pipe(parse({ info: true, bom: true, skip_empty_lines: true }));
  let columns: (DescField | undefined)[] | undefined;
  for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
    if (columns === undefined) columns = record.map((name) => fieldsByName.get(name));
    else yield item(`line ${info.lines}`, exportedRowWrite(jsonOfCsvRow(columns, record), context));
  }
}

const fieldsByName = new Map(StoredTraceSchema.fields.map((f) => [f.name, f]));

/** A CSV row as the JSON row it was written from: empty cells and unknown columns unset, numbers, tags and metadata read back, spreadsheet guards taken off. */
function jsonOfCsvRow(columns: (DescField | undefined)[], cells: string[]): JsonObject {
  const row: JsonObject = {};
  for (let i = 0; i < cells.length; i++) {
    const field = columns[i];
    const cell = cells[i]!;
    if (field === undefined || cell === "") continue;
    row[field.name] = cellValue(field, cell);
  }
  return row;
}

function cellValue(field: DescField, cell: string): JsonObject[string] {
  if (field.fieldKind === "list" || field.fieldKind === "map") {
    try {
      return JSON.parse(cell) as JsonObject[string];
    } catch {
      return cell; // left for the API's reader to refuse, with its message
    }
  }
  if (field.fieldKind === "scalar" && (field.scalar === ScalarType.INT32 || field.scalar === ScalarType.DOUBLE)) {
    const number = Number(cell);
    return Number.isNaN(number) ? cell : number;
  }
  // csv-parse already undid the quoting; the export's apostrophe before formula-like text is undone here.
  return cell.startsWith("'") && formulaLike.test(cell.slice(1)) ? cell.slice(1) : cell;
}

function item(where: string, result: ReturnType<typeof exportedRowWrite>): ImportItem {
  return typeof result === "string" ? { where, rejected: result } : { where, write: result };
}
