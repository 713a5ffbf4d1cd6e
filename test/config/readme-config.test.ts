import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { configTableMarkdown } from "../../src/config/config-table.js";
import { readmeWithConfigTable } from "../../src/config/readme-config-section.js";

describe("README configuration table", () => {
  it("matches the options the service reads (run `npm run docs:config` after adding one)", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    expect(readmeWithConfigTable(readme, configTableMarkdown())).toBe(readme);
  });
});
