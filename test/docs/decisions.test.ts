import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// The repository stands alone: every decision the code, tests, protos and docs cite as `D<n>` is
// in docs/decisions.md under its anchor, and nothing points at notes outside the repository.
const root = new URL("../..", import.meta.url).pathname;
const record = readFileSync(`${root}docs/decisions.md`, "utf8");
const tracked = execFileSync("git", ["ls-files", "-co", "--exclude-standard", "-z"], { cwd: root, encoding: "utf8" })
  .split("\0")
  .filter((file) => file && !/^(gen\/|\.ci\/)|node_modules|package-lock\.json$|\.(png|jpe?g|mmdb|tgz)$/.test(file));

function read(file: string): string {
  try {
    return readFileSync(`${root}${file}`, "utf8");
  } catch {
    return ""; // listed but gone (deleted in the work tree)
  }
}

describe("docs/decisions.md", () => {
  it("has an anchor #d<n> for every D<n> cited anywhere in the repository", () => {
    const cited = new Map<number, string>();
    for (const file of tracked) {
      for (const match of read(file).matchAll(/\bD([1-9]\d?)\b/g)) if (!cited.has(Number(match[1]))) cited.set(Number(match[1]), file);
    }
    const missing = [...cited].filter(([n]) => !record.includes(`<a id="d${n}"></a>D${n}.`)).map(([n, file]) => `D${n} (cited in ${file})`);
    expect(missing).toEqual([]);
    expect(cited.size).toBeGreaterThan(20);
  });

  it("numbers its decisions in order, each once", () => {
    const numbers = [...record.matchAll(/<a id="d(\d+)"><\/a>D(\d+)\./g)].map((m) => [Number(m[1]), Number(m[2])]);
    expect(numbers.every(([anchor, title]) => anchor === title)).toBe(true);
    expect(numbers.map(([n]) => n)).toEqual(numbers.map((_, i) => i + 1));
  });

  it("keeps each decision to what was decided and why: about 150 words, never past 170", () => {
    const sections = record.split(/\n(?=### <a id="d)/).filter((section) => section.startsWith("### <a id"));
    const long = sections
      .map((section) => [section.slice(0, section.indexOf("\n")), section.slice(section.indexOf("\n")).split(/\s+/).filter(Boolean).length] as const)
      .filter(([, words]) => words > 170);
    expect(sections.length).toBeGreaterThan(60);
    expect(long).toEqual([]);
  });

  it("nothing outside .ci/ points at the notes beside the repository", () => {
    // Spelt in two parts, so that this file does not name the path it looks for.
    const outside = ["..", "shared"].join("/");
    expect(tracked.filter((file) => read(file).includes(outside))).toEqual([]);
  });
});
