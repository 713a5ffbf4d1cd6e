const begin = "<!-- config-table:begin -->";
const end = "<!-- config-table:end -->";

/** The README with the text between the config-table markers replaced by `table`. */
export function readmeWithConfigTable(readme: string, table: string): string {
  const start = readme.indexOf(begin);
  const stop = readme.indexOf(end);
  if (start < 0 || stop < start) throw new Error("README.md has no config-table markers");
  return `${readme.slice(0, start + begin.length)}\n${table}\n${readme.slice(stop)}`;
}
