import { Truncated } from "./truncated.js";

/**
 * Horizontal bars with a label and a value each, longest first as given; the values are text, so
 * readable without a mouse. The list is one tab stop, which shows every label whole while focused.
 */
export function BarList({ rows, colour }: { rows: { label: string; value: number; text: string; colour?: string }[]; colour?: string }) {
  const max = Math.max(...rows.map((r) => r.value), 0) || 1;
  return (
    <ul class="bar-list" tabIndex={0}>
      {rows.map((r) => (
        <li>
          <Truncated text={r.label} class="label" focusable={false} />
          <span class="track" aria-hidden="true">
            <span class="fill" style={{ width: `${(100 * r.value) / max}%`, background: r.colour ?? colour ?? "#4e79a7" }} />
          </span>
          <span class="value">{r.text}</span>
        </li>
      ))}
    </ul>
  );
}
