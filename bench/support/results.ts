import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const resultsFile = fileURLToPath(new URL("../RESULTS.md", import.meta.url));

/** Replaces (or appends) the section between `<!-- name:begin -->` and `<!-- name:end -->` in bench/RESULTS.md. */
export function writeResultsSection(name: string, markdown: string): void {
  const begin = `<!-- ${name}:begin -->`;
  const end = `<!-- ${name}:end -->`;
  const current = existsSync(resultsFile) ? readFileSync(resultsFile, "utf8") : "# Benchmark results\n";
  const section = `${begin}\n${markdown.trim()}\n${end}`;
  const start = current.indexOf(begin);
  const stop = current.indexOf(end);
  const next = start >= 0 && stop > start ? current.slice(0, start) + section + current.slice(stop + end.length) : `${current.trimEnd()}\n\n${section}\n`;
  writeFileSync(resultsFile, next);
}

/** A Markdown table from a header row and rows. */
export function table(header: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

export function machineLine(): string {
  return `${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${process.platform}/${process.arch}`;
}

/** A regression guard: whether `ratio` holds at least `floor`, for the console and for RESULTS.md. */
export function guard(name: string, ratio: number, floor: number): { held: boolean; line: string; markdown: string } {
  const held = ratio >= floor;
  const verdict = held ? "HELD" : "NOT HELD";
  return { held, line: `${name}: ${verdict} (${ratio.toFixed(2)}×)`, markdown: `${name} **${verdict}** (${ratio.toFixed(2)}×)` };
}
