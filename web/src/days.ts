/** Every UTC day from `since` to `until`, as YYYY-MM-DD (at most 400). */
export function dayRange(since: Date, until: Date): string[] {
  const days: string[] = [];
  const d = new Date(Date.UTC(since.getUTCFullYear(), since.getUTCMonth(), since.getUTCDate()));
  while (d <= until && days.length < 400) {
    days.push(d.toISOString().slice(0, 10));
    d.setUTCDate(d.getUTCDate() + 1);
  }
  return days;
}
