/** A request target's path, without its query; "" for none. Runs for every request: no array is built. */
export function pathOf(url: string | undefined): string {
  if (url === undefined) return "";
  const query = url.indexOf("?");
  return query < 0 ? url : url.slice(0, query);
}
