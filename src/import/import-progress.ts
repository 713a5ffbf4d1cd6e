import type { ImportCounts } from "./trace-import.js";

/** How often a terminal's progress line is redrawn. */
const redrawMs = 100;
const barWidth = 24;

/**
 * An import's progress on stderr. On a terminal, one line redrawn in place (\r) with a bar of the
 * current file's bytes read; elsewhere (a log, a pipe), a plain line per file and every 100,000
 * traces. Written here rather than with a progress library: it is one line, and a library would
 * also want to own the cursor and the report printed after it.
 */
export class ImportProgress {
  private file = "";
  private lastDraw = 0;
  private lastLogged = 0;
  private readonly started = performance.now();

  constructor(private readonly out: NodeJS.WriteStream) {}

  startFile(name: string): void {
    this.file = name;
    if (!this.out.isTTY) this.out.write(`importing ${name}\n`);
  }

  /** `fraction`: how much of the current file is read, 0 to 1. */
  update(counts: ImportCounts, fraction: number): void {
    if (this.out.isTTY) {
      const now = performance.now();
      if (now - this.lastDraw < redrawMs && fraction < 1) return;
      this.lastDraw = now;
      const filled = Math.round(Math.min(1, Math.max(0, fraction)) * barWidth);
      const bar = `[${"#".repeat(filled)}${"-".repeat(barWidth - filled)}] ${Math.floor(fraction * 100)}%`;
      this.out.write(`\r\x1b[K${this.file} ${bar} ${summary(counts)} ${this.rate(counts)}`);
    } else if (counts.read - this.lastLogged >= 100_000) {
      this.lastLogged = counts.read;
      this.out.write(`${this.file}: ${summary(counts)} ${this.rate(counts)}\n`);
    }
  }

  /** A line of its own, above the progress line on a terminal. */
  note(line: string): void {
    this.out.write(this.out.isTTY ? `\r\x1b[K${line}\n` : `${line}\n`);
  }

  /** Leaves the progress line, so the report starts on a line of its own. */
  finish(): void {
    if (this.out.isTTY) this.out.write("\n");
  }

  rate(counts: ImportCounts): string {
    const seconds = (performance.now() - this.started) / 1000;
    return `${Math.round(counts.read / Math.max(seconds, 0.001)).toLocaleString("en-US")} traces/s`;
  }
}

export function summary(counts: ImportCounts): string {
  return `${counts.read} read, ${counts.stored} stored, ${counts.duplicates} duplicates, ${counts.rejected} rejected`;
}
