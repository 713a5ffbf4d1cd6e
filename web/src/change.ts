/**
 * How a headline figure moved against the previous period: relative for amounts (spend, calls,
 * tokens, latency), in percentage points for rates (the error rate), whose relative change
 * (+100% from 1% to 2%) would overstate it.
 */
export function changeText(current: number, previous: number, kind: "amount" | "rate"): string {
  if (kind === "rate") {
    const points = 100 * (current - previous);
    return Math.abs(points) < 0.05 ? "no change" : `${arrow(points)} ${signed(points.toFixed(1))} pp`;
  }
  if (previous === 0) return current === 0 ? "no change" : "new: none before";
  const relative = (100 * (current - previous)) / previous;
  return Math.abs(relative) < 0.05 ? "no change" : `${arrow(relative)} ${signed(relative.toFixed(1))}%`;
}

const arrow = (n: number) => (n > 0 ? "▲" : "▼");
const signed = (text: string) => (text.startsWith("-") ? `−${text.slice(1)}` : `+${text}`);
