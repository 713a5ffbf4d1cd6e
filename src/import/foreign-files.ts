import { readFile } from "node:fs/promises";
import type { JsonObject } from "@bufbuild/protobuf";
import { foreignMappings, foreignRowWrite } from "./foreign-rows.js";
import type { ImportContext, ImportItem } from "./import-item.js";

export type ForeignSource = keyof typeof foreignMappings;
export const foreignSources = Object.keys(foreignMappings);

/**
 * The calls of a Langfuse or Helicone export: JSON Lines (one row a line), or one JSON document, an
 * array of rows or an API page (`{"data": [...]}`). Rows that are no LLM call are skipped.
 */
export async function* foreignItems(path: string, source: ForeignSource, context: ImportContext): AsyncGenerator<ImportItem> {
  const map = foreignMappings[source]!;
  for (const { where, row, problem } of rowsOf(await readFile(path, "utf8"))) {
    if (problem !== undefined) {
      yield { where, rejected: problem };
      continue;
    }
    const result = foreignRowWrite(row!, map, source, context);
    if (result === undefined) continue;
    yield typeof result === "string" ? { where, rejected: result } : { where, write: result };
  }
}

function* rowsOf(text: string): Generator<{ where: string; row?: JsonObject; problem?: string }> {
  let whole: unknown;
  try {
    whole = JSON.parse(text);
  } catch {
    whole = undefined; // JSON Lines
  }
  const list = Array.isArray(whole) ? whole : Array.isArray((whole as { data?: unknown })?.data) ? (whole as { data: unknown[] }).data : undefined;
  if (list) {
    for (const [index, row] of list.entries()) yield rowOrProblem(`row ${index + 1}`, row);
    return;
  }
  const lines = text.split(/\r?\n/);
  for (const [index, line] of lines.entries()) {
    if (line.trim() === "") continue;
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch (error) {
      yield { where: `line ${index + 1}`, problem: `not JSON: ${(error as Error).message}` };
      continue;
    }
    yield rowOrProblem(`line ${index + 1}`, row);
  }
}

function rowOrProblem(where: string, row: unknown): { where: string; row?: JsonObject; problem?: string } {
  return typeof row === "object" && row !== null && !Array.isArray(row) ? { where, row: row as JsonObject } : { where, problem: "not a JSON object" };
}
