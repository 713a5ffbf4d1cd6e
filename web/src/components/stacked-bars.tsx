import { colourOf } from "./palette.js";
import { Truncated } from "./truncated.js";

export interface Series {
  /** Tells series apart when names may repeat (two providers may both have a model of one name); the name by default. */
  key?: string;
  name: string;
  /** One value per column. */
  values: number[];
}

/**
 * Columns (days) of stacked values (models), drawn as SVG, with a legend, and the same values as
 * a table for keyboards and screen readers (each bar also names its value on hover).
 */
export function StackedBars({
  columns,
  series,
  format,
  axisFormat = format,
  label,
}: {
  columns: string[];
  series: Series[];
  format: (n: number) => string;
  axisFormat?: (n: number) => string;
  label: string;
}) {
  const width = 640;
  const height = 180;
  const pad = { left: 72, bottom: 22, top: 8 };
  const totals = columns.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const max = Math.max(...totals, 0) || 1;
  const slot = (width - pad.left) / Math.max(columns.length, 1);
  const bar = Math.max(1, slot * 0.8);
  const y = (v: number) => ((height - pad.bottom - pad.top) * v) / max;
  const every = Math.ceil(columns.length / 8);

  return (
    <figure class="chart" aria-label={label}>
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
                return h > 0 ? (
                  <rect key={s.key ?? s.name} x={x} y={top} width={bar} height={h} fill={colourOf(j)}>
                    <title>{`${column} · ${s.name}: ${format(s.values[i] ?? 0)}`}</title>
                  </rect>
                ) : null;
              })}
              {i % every === 0 && (
                <text x={x + bar / 2} y={height - 6} text-anchor="middle" class="axis">
                  {column.slice(5)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption class="legend">
        {series.map((s, j) => (
          <span key={s.key ?? s.name} data-series={s.key ?? s.name}>
            <i style={{ background: colourOf(j) }} />
            <Truncated text={s.name} />
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
                <th scope="col">Day (UTC)</th>
                {series.map((s) => (
                  <th scope="col" key={s.key ?? s.name}>
                    <Truncated text={s.name} />
                  </th>
                ))}
                <th scope="col" class="num">
                  Total
                </th>
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
                  <td class="num">{format(totals[i] ?? 0)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
