import { coloursOf } from "./palette.js";
import { Truncated } from "./truncated.js";
import { useWidth } from "./use-width.js";

export interface Series {
  /** Tells series apart when names may repeat (two providers may both have a model of one name); the name by default. */
  key?: string;
  name: string;
  /** One value per column. */
  values: number[];
}

/**
 * Columns (days) of values per series (models), drawn as SVG, with a legend, and the same values
 * as a table for keyboards and screen readers (each bar also names its value on hover). Stacked
 * by default; `stacked={false}` draws the series side by side, for groups that overlap (a call
 * with two tags counts in both), whose values do not add up.
 */
export function StackedBars({
  columns,
  series,
  format,
  axisFormat = format,
  label,
  stacked = true,
  columnName = "Day (UTC)",
  columnLabel = (column: string) => column.slice(5),
}: {
  columns: string[];
  series: Series[];
  format: (n: number) => string;
  axisFormat?: (n: number) => string;
  label: string;
  stacked?: boolean;
  /** What a column is, in the table view's header. */
  columnName?: string;
  /** A column's axis label: MM-DD for days by default. */
  columnLabel?: (column: string) => string;
}) {
  const { ref, width } = useWidth<HTMLElement>(640);
  const height = 180;
  const pad = { left: 72, bottom: 22, top: 8 };
  const totals = columns.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const peaks = columns.map((_, i) => Math.max(0, ...series.map((s) => s.values[i] ?? 0)));
  const max = Math.max(...(stacked ? totals : peaks), 0) || 1;
  const slot = (width - pad.left) / Math.max(columns.length, 1);
  const bar = Math.max(1, slot * 0.8);
  const y = (v: number) => ((height - pad.bottom - pad.top) * v) / max;
  // Day labels at least ~48 px apart, so they never overlap however narrow the card.
  const every = Math.max(1, Math.ceil(columns.length / Math.max(1, Math.floor((width - pad.left) / 48))));
  const colours = coloursOf(series.map((s) => s.key ?? s.name));
  const colour = (s: Series) => colours.get(s.key ?? s.name);

  return (
    <figure class="chart" aria-label={label} ref={ref}>
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label={`${label}: the table below lists every value`}>
        <text x={pad.left - 6} y={pad.top + 10} text-anchor="end" class="axis" data-axis-max>
          {axisFormat(max)}
        </text>
        <text x={pad.left - 6} y={height - pad.bottom} text-anchor="end" class="axis">
          0
        </text>
        <line x1={pad.left} x2={width} y1={height - pad.bottom} y2={height - pad.bottom} class="baseline" />
        {columns.map((column, i) => {
          let top = height - pad.bottom;
          const x = pad.left + i * slot + (slot - bar) / 2;
          return (
            <g key={column}>
              {series.map((s, j) => {
                const h = y(s.values[i] ?? 0);
                top -= h;
                const side = bar / Math.max(series.length, 1);
                return h > 0 ? (
                  <rect
                    key={s.key ?? s.name}
                    x={stacked ? x : x + j * side}
                    y={stacked ? top : height - pad.bottom - h}
                    width={stacked ? bar : Math.max(1, side)}
                    height={h}
                    fill={colour(s)}
                  >
                    <title>{`${column} · ${s.name}: ${format(s.values[i] ?? 0)}`}</title>
                  </rect>
                ) : null;
              })}
              {i % every === 0 && (
                <text x={x + bar / 2} y={height - 6} text-anchor="middle" class="axis">
                  {columnLabel(column)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption class="legend" tabIndex={0}>
        {series.map((s) => (
          <span key={s.key ?? s.name} data-series={s.key ?? s.name}>
            <i style={{ background: colour(s) }} />
            <Truncated text={s.name} focusable={false} />
          </span>
        ))}
      </figcaption>
      <details class="chart-table">
        <summary>Values as a table</summary>
        <div class="table-wrap">
          <table>
            <caption class="sr-only">{label}</caption>
            <thead>
              <tr>
                <th scope="col">{columnName}</th>
                {series.map((s) => (
                  <th scope="col" key={s.key ?? s.name}>
                    <Truncated text={s.name} />
                  </th>
                ))}
                {stacked && (
                  <th scope="col" class="num">
                    Total
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {columns.map((column, i) => (
                <tr key={column}>
                  <th scope="row">{column}</th>
                  {series.map((s) => (
                    <td class="num" key={s.key ?? s.name}>
                      {format(s.values[i] ?? 0)}
                    </td>
                  ))}
                  {stacked && <td class="num">{format(totals[i] ?? 0)}</td>}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
