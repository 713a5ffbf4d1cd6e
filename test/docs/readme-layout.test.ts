import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// The README's layout names every folder a newcomer will meet: each top-level folder and each
// folder of src/ that git tracks.
const root = new URL("../..", import.meta.url).pathname;
const readme = readFileSync(`${root}README.md`, "utf8");
const layout = /## Layout\n[\s\S]*?```\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
const folders = execFileSync("git", ["ls-files", "-co", "--exclude-standard"], { cwd: root, encoding: "utf8" })
  .split("\n")
  .flatMap((file) => {
    const parts = file.split("/");
    if (parts.length < 2) return [];
    return parts[0] === "src" && parts.length > 2 ? [`${parts[0]}/${parts[1]}/`] : [`${parts[0]}/`];
  });

describe("README layout", () => {
  it("lists every top-level folder and every src/ folder", () => {
    expect(layout).not.toBe("");
    const missing = [...new Set(folders)].filter((folder) => !new RegExp(`(^|\\s)${folder.replace(/\./g, "\\.")}`, "m").test(layout));
    expect(missing).toEqual([]);
  });
});
