import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { useState } from "preact/hooks";
import type { DayModelUsage, LatencyBucket, ModelUsage, UsageTotals } from "../../../gen/calltrace/v1/query_pb.js";
import { query } from "../api.js";
import { BarList } from "../components/bar-list.js";
import { Histogram } from "../components/histogram.js";
import { colourOf } from "../components/palette.js";
import { PriceChecks } from "../components/price-checks.js";
import { StackedBars, type Series } from "../components/stacked-bars.js";
import { count, ms, percent, plural, usd } from "../format.js";
import { useQuery } from "../use-query.js";

const periods = { "24h": 1, "7d": 7, "30d": 30, "90d": 90 } as const;
type Period = keyof typeof periods;

/** Refreshed on this interval, so new traces show up without a reload. */
const refreshMs = 5000;

export function Overview() {
  const [period, setPeriod] = useState<Period>("30d");
  const { data, error } = useQuery(
    async () => {
      const since = periodStart(period, Date.now());
      const filter = { since: timestampFromDate(since) };
      const [totals, models, days, latency] = await Promise.all([
        query.getUsageTotals({ filter }),
        query.getUsageByModel({ filter }),
        query.getUsageByDay({ filter }),
        query.getLatencyHistogram({ filter }),
      ]);
      return { since, totals: totals.totals!, models: models.models, days: days.days, buckets: latency.buckets };
    },
    [period],
    refreshMs,
  );

  return (
    <section>
      <div class="row between">
        <h1>Overview</h1>
        <div class="segmented" role="group" aria-label="Period">
          {(Object.keys(periods) as Period[]).map((p) => (
            <button type="button" class={p === period ? "active" : ""} onClick={() => setPeriod(p)}>
              {p}
            </button>
          ))}
        </div>
      </div>
      <p class="muted small">{period === "24h" ? "The last 24 hours." : `The last ${periods[period]} days in UTC, today included.`} Updates every few seconds.</p>
      {error && <p class="error">{error}</p>}
      {data && <OverviewBody {...data} />}
    </section>
  );
}

function OverviewBody({ since, totals, models, days, buckets }: { since: Date; totals: UsageTotals; models: ModelUsage[]; days: DayModelUsage[]; buckets: LatencyBucket[] }) {
  const calls = Number(totals.calls);
  const modelNames = models.map((m) => m.model);
  const columns = dayRange(since, new Date());
  const series = (pick: (d: DayModelUsage) => number): Series[] =>
    modelNames.map((model) => ({
      name: model,
      values: columns.map((day) => days.filter((d) => d.day === day && d.model === model).reduce((sum, d) => sum + pick(d), 0)),
    }));
  return (
    <>
      <div class="tiles">
        <Tile label="Total spend" value={usd(totals.costUsd)} id="total-spend" />
        <Tile label="Calls" value={count(totals.calls)} id="total-calls" />
        <Tile label="Error rate" value={percent(Number(totals.errors), calls)} id="error-rate" />
        <Tile label="p50 latency" value={ms(totals.latencyP50Ms)} id="p50" />
        <Tile label="p95 latency" value={ms(totals.latencyP95Ms)} id="p95" />
        <Tile label="Tokens in / out" value={`${count(totals.tokensIn)} / ${count(totals.tokensOut)}`} id="tokens" />
      </div>
      <PriceChecks totals={totals} />
      {calls === 0 ? (
        <p class="muted card">No traces in this period yet. Create an API key under Settings and point an SDK at this server.</p>
      ) : (
        <div class="grid2">
          <div class="card">
            <h2>Spend per day (USD, by model)</h2>
            <StackedBars label="Spend per day" columns={columns} series={series((d) => d.totals?.costUsd ?? 0)} format={usd} />
          </div>
          <div class="card">
            <h2>Calls per day (by model)</h2>
            <StackedBars label="Calls per day" columns={columns} series={series((d) => Number(d.totals?.calls ?? 0))} format={(n) => count(Math.round(n))} />
          </div>
          <div class="card">
            <h2>Top models by spend</h2>
            <BarList
              rows={models.slice(0, 10).map((m, i) => ({
                label: `${m.provider} · ${m.model}`,
                value: m.totals?.costUsd ?? 0,
                text: `${usd(m.totals?.costUsd ?? 0)} · ${plural(m.totals?.calls ?? 0n, "call")}`,
                colour: colourOf(i),
              }))}
            />
          </div>
          <div class="card">
            <h2>Latency distribution</h2>
            <Histogram buckets={buckets} />
          </div>
        </div>
      )}
    </>
  );
}

function Tile({ label, value, id }: { label: string; value: string; id: string }) {
  return (
    <div class="tile" data-tile={id}>
      <span class="muted small">{label}</span>
      <strong>{value}</strong>
    </div>
  );
}

/**
 * The last 24 hours, or whole UTC days: today and the days before it. Whole days match the
 * per-day charts and let the store answer from its daily roll-ups instead of reading traces.
 */
function periodStart(period: Period, now: number): Date {
  if (period === "24h") return new Date(now - 86400e3);
  const today = Math.floor(now / 86400e3) * 86400e3;
  return new Date(today - (periods[period] - 1) * 86400e3);
}

/** Every UTC day from `since` to `until`, as YYYY-MM-DD. */
function dayRange(since: Date, until: Date): string[] {
  const days: string[] = [];
  const d = new Date(Date.UTC(since.getUTCFullYear(), since.getUTCMonth(), since.getUTCDate()));
  while (d <= until && days.length < 400) {
    days.push(d.toISOString().slice(0, 10));
    d.setUTCDate(d.getUTCDate() + 1);
  }
  return days;
}
