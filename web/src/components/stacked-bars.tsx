import { colourOf } from "./palette.js";

export interface Series {
  name: string;
  /** One value per column. */
  values: number[];
}

/** Columns (days) of stacked values (models), drawn as SVG, with a legend. */
export function StackedBars({ columns, series, format, label }: { columns: string[]; series: Series[]; format: (n: number) => string; label: string }) {
  const width = 640;
  const height = 180;
  const pad = { left: 64, bottom: 22, top: 8 };
  const totals = columns.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const max = Math.max(...totals, 0) || 1;
  const slot = (width - pad.left) / Math.max(columns.length, 1);
  const bar = Math.max(1, slot * 0.8);
  const y = (v: number) => ((height - pad.bottom - pad.top) * v) / max;
  const every = Math.ceil(columns.length / 8);

  return (
    <figure class="chart" aria-label={label}>
      <svg viewBox={`0 0 ${width} ${height}`} role="img">
        <text x={pad.left - 6} y={pad.top + 10} text-anchor="end" class="axis">
          {format(max)}
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
                  <rect x={x} y={top} width={bar} height={h} fill={colourOf(j)}>
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
          <span>
            <i style={{ background: colourOf(j) }} />
            {s.name}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}
