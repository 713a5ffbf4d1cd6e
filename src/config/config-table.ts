import { configOptions } from "./config.js";

/** The README's configuration table, made from the options table so the two cannot drift. */
export function configTableMarkdown(): string {
  const rows = Object.values(configOptions).map((o) => {
    const fallback = "fallback" in o ? `\`${o.fallback}\`` : "unset";
    return `| \`${o.env}\` | \`--${o.flag}\` | ${fallback} | ${o.describe} |`;
  });
  return ["| variable | flag | default | meaning |", "| --- | --- | --- | --- |", ...rows].join("\n");
}
