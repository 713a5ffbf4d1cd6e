/** Horizontal bars with a label and a value each, longest first as given. */
export function BarList({ rows, colour }: { rows: { label: string; value: number; text: string; colour?: string }[]; colour?: string }) {
  const max = Math.max(...rows.map((r) => r.value), 0) || 1;
  return (
    <ul class="bar-list">
      {rows.map((r) => (
        <li>
          <span class="label">{r.label}</span>
          <span class="track">
            <span class="fill" style={{ width: `${(100 * r.value) / max}%`, background: r.colour ?? colour ?? "#4e79a7" }} />
          </span>
          <span class="value">{r.text}</span>
        </li>
      ))}
    </ul>
  );
}
