import type { LatencyBucket } from "../../../gen/calltrace/v1/query_pb.js";
import { count } from "../format.js";
import { useWidth } from "./use-width.js";

/** The latency distribution: one bar per bucket, labelled by its upper bound, with the counts as a table too. */
export function Histogram({ buckets }: { buckets: LatencyBucket[] }) {
  const { ref, width } = useWidth<HTMLElement>(640);
  const height = 160;
  const bottom = 22;
  const max = Math.max(...buckets.map((b) => Number(b.calls)), 0) || 1;
  const slot = width / Math.max(buckets.length, 1);
  // Labels at least ~44 px apart, so they never overlap however narrow the card.
  const every = Math.ceil(44 / slot);
  const labelOf = (b: LatencyBucket, i: number) => (b.upperBoundMs === 0 ? `>${buckets[i - 1]?.upperBoundMs ?? 0}` : `≤${b.upperBoundMs}`);
  return (
    <figure class="chart" aria-label="Latency distribution" ref={ref}>
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label="Calls by latency: the table below lists every value">
        {buckets.map((b, i) => {
          const h = ((height - bottom - 12) * Number(b.calls)) / max;
          const label = labelOf(b, i);
          return (
            <g>
              <rect x={i * slot + 2} y={height - bottom - h} width={slot - 4} height={h} fill="#76b7b2">
                <title>{`${label} ms: ${count(b.calls)} calls`}</title>
              </rect>
              {i % every === 0 && (
                <text x={i * slot + slot / 2} y={height - 6} text-anchor="middle" class="axis">
                  {label}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption class="muted small">Calls by latency (ms)</figcaption>
      <details class="chart-table">
        <summary>Values as a table</summary>
        <table>
          <thead>
            <tr>
              <th scope="col">Latency (ms)</th>
              <th scope="col" class="num">
                Calls
              </th>
            </tr>
          </thead>
          <tbody>
            {buckets.map((b, i) => (
              <tr>
                <th scope="row">{labelOf(b, i)}</th>
                <td class="num">{count(b.calls)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}
