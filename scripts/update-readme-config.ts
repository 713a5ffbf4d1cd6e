// Rewrites the configuration table in README.md from the options table in src/config/config.ts.
import { readFileSync, writeFileSync } from "node:fs";
import { configTableMarkdown } from "../src/config/config-table.js";
import { readmeWithConfigTable } from "../src/config/readme-config-section.js";

const file = new URL("../README.md", import.meta.url);
writeFileSync(file, readmeWithConfigTable(readFileSync(file, "utf8"), configTableMarkdown()));
