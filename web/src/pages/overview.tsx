import {
  Dimension,
  type DayModelUsage,
  type GroupUsage,
  type LatencyBucket,
  type ModelUsage,
  type TraceFilter,
  type UsageTotals,
} from "../../../gen/calltrace/v1/query_pb.js";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { account, query } from "../api.js";
import { attributesFromQuery, attributesToQuery, joinQuery, withAttributes, type Attributes } from "../attributes.js";
import { AttributeBar } from "../components/attribute-bar.js";
import { FilterBar } from "../components/filter-bar.js";
import { BarList } from "../components/bar-list.js";
import { Histogram } from "../components/histogram.js";
import { coloursOf } from "../components/palette.js";
import { PriceChecks } from "../components/price-checks.js";
import { StackedBars, type Series } from "../components/stacked-bars.js";
import { dayRange } from "../days.js";
import { UrlNotice } from "../components/url-notice.js";
import { changeText } from "../change.js";
import { bounds, filtersFromQuery, filtersToQuery, previousBounds, queryProblems, traceFilter, type Filters } from "../filters.js";
import { QueryStatus } from "../components/query-status.js";
import { count, dateTime, ms, percent, plural, usd, usdShort } from "../format.js";
import { navigate, projectBase, useLocation } from "../router.js";
import { useQuery } from "../use-query.js";

/** Refreshed on this interval, so new traces show up without a reload. */
const refreshMs = 5000;

export function Overview() {
  const { query: params } = useLocation();
  const filters = filtersFromQuery(params, "30d");
  const attributes = attributesFromQuery(params);
  const filterKey = joinQuery(filtersToQuery(filters), attributesToQuery(attributes));
  const keys = useQuery(async () => (await account.listKeys({})).keys, []);
  const state = useQuery(
    async () => {
      const filter = withAttributes(traceFilter(filters), attributes);
      const previous = previousBounds(filters);
      const [totals, models, days, latency, byKey, byProvider, trend, before] = await Promise.all([
        query.getUsageTotals({ filter }),
        query.getUsageByModel({ filter }),
        query.getUsageByDay({ filter }),
        query.getLatencyHistogram({ filter }),
        query.getUsageByGroup({ filter, dimension: Dimension.KEY, limit: 10 }),
        query.getUsageByGroup({ filter, dimension: Dimension.PROVIDER, limit: 10 }),
        trendOf(filters, filter),
        previous ? query.getUsageTotals({ filter: withAttributes(traceFilter(filters, previous), attributes) }) : undefined,
      ]);
      // The charts start on the range's first day, or for all time on the first day with calls.
      const since = bounds(filters).since ?? new Date(days.days[0]?.day ?? Date.now());
      return {
        since,
        totals: totals.totals!,
        models: models.models,
        days: days.days,
        buckets: latency.buckets,
        byKey: byKey.groups,
        byProvider: byProvider.groups,
        trend,
        ...(previous && before?.totals ? { previous: { ...previous, totals: before.totals } } : {}),
      };
    },
    [filterKey],
    refreshMs,
  );
  const { data } = state;
  const change = (f: Filters, a: Attributes) => navigate(`${projectBase()}?${joinQuery(filtersToQuery(f), attributesToQuery(a))}`);
  const keyNames = new Map((keys.data ?? []).map((k) => [k.id, `${k.name || "(unnamed)"} · ct_${k.prefix}…`]));

  return (
    <section>
      <div class="row between">
        <h1>Overview</h1>
      </div>
      <UrlNotice problems={queryProblems(params)} />
      <FilterBar filters={filters} onChange={(f) => change(f, attributes)} keys={keys.data ?? []} models={[]} />
      <AttributeBar attributes={attributes} onChange={(a) => change(filters, a)} />
      <p class="muted small">Updates every few seconds.</p>
      <QueryStatus state={state} what="the overview" />
      {data && <OverviewBody {...data} />}
      {data && Number(data.totals.calls) > 0 && (
        <div class="grid2 breakdowns">
          <div class="card" data-breakdown="key">
            <h2>Spend by API key</h2>
            <GroupBars groups={data.byKey} label={(id) => keyNames.get(id) ?? id} />
          </div>
          <div class="card" data-breakdown="provider">
            <h2>Spend by provider</h2>
            <GroupBars groups={data.byProvider} label={(p) => p} />
          </div>
        </div>
      )}
    </section>
  );
}

/** Groups of one dimension as bars of their spend, highest first. */
function GroupBars({ groups, label }: { groups: GroupUsage[]; label: (value: string) => string }) {
  const colours = coloursOf(groups.map((g) => label(g.value)));
  return (
    <BarList
      rows={groups.map((g) => ({
        label: label(g.value),
        value: g.totals?.costUsd ?? 0,
        text: `${usd(g.totals?.costUsd ?? 0)} · ${plural(g.totals?.calls ?? 0n, "call")}`,
        colour: colours.get(label(g.value)),
      }))}
    />
  );
}

function OverviewBody({
  since,
  totals,
  models,
  days,
  buckets,
  trend,
  previous,
}: {
  since: Date;
  totals: UsageTotals;
  models: ModelUsage[];
  days: DayModelUsage[];
  buckets: LatencyBucket[];
  trend: Trend;
  previous?: { since: Date; until: Date; totals: UsageTotals };
}) {
  const calls = Number(totals.calls);
  const columns = dayRange(since, new Date());
  // The charts' series are these models too, so a model has one colour on the whole page.
  const modelColours = coloursOf(models.map(seriesKey));
  const before = previous?.totals;
  const errorRate = (t: UsageTotals) => (t.calls === 0n ? 0 : Number(t.errors) / Number(t.calls));
  const tokens = (t: UsageTotals) => Number(t.tokensIn + t.tokensOut);
  const change = (pick: (t: UsageTotals) => number, kind: "amount" | "rate" = "amount") => (before ? changeText(pick(totals), pick(before), kind) : undefined);
  // The trends per day or hour, every model together: the error rate and latency percentiles.
  const onColumn = (column: string) => trend.totals.get(column);
  const latencySeries: Series[] = [
    { name: "p50 (estimate)", values: trend.columns.map((c) => onColumn(c)?.latencyP50Ms ?? 0) },
    { name: "p95 (estimate)", values: trend.columns.map((c) => onColumn(c)?.latencyP95Ms ?? 0) },
  ];
  const errorSeries: Series[] = [
    {
      name: "Error rate",
      values: trend.columns.map((c) => {
        const t = onColumn(c);
        return t ? 100 * errorRate(t) : 0;
      }),
    },
  ];
  // One series per provider and model: two providers may serve models of the same name.
  const series = (pick: (d: DayModelUsage) => number): Series[] =>
    models.map(({ provider, model }) => ({
      key: seriesKey({ provider, model }),
      name: `${provider} · ${model}`,
      values: columns.map((day) =>
        days.filter((d) => d.day === day && d.provider === provider && d.model === model).reduce((sum, d) => sum + pick(d), 0),
      ),
    }));
  return (
    <>
      <div class="tiles">
        <Tile label="Total spend" value={usd(totals.costUsd)} id="total-spend" change={change((t) => t.costUsd)} />
        <Tile label="Calls" value={count(totals.calls)} id="total-calls" change={change((t) => Number(t.calls))} />
        <Tile label="Error rate" value={percent(Number(totals.errors), calls)} id="error-rate" change={change(errorRate, "rate")} />
        <Tile label="p50 latency (estimate)" value={`≈ ${ms(totals.latencyP50Ms)}`} id="p50" note={estimateNote} change={change((t) => t.latencyP50Ms)} />
        <Tile label="p95 latency (estimate)" value={`≈ ${ms(totals.latencyP95Ms)}`} id="p95" note={estimateNote} change={change((t) => t.latencyP95Ms)} />
        <Tile label="Tokens in / out" value={`${count(totals.tokensIn)} / ${count(totals.tokensOut)}`} id="tokens" change={change(tokens)} />
      </div>
      <p class="muted small" data-previous>
        {previous
          ? `Changes are against the previous period of the same length: ${dateTime(previous.since)} to ${dateTime(previous.until)} (${usd(previous.totals.costUsd)}, ${plural(previous.totals.calls, "call")}).`
          : "All time has no previous period to compare with."}
      </p>
      <PriceChecks totals={totals} />
      {calls === 0 ? (
        <p class="muted card">No traces in this period yet. Create an API key under Settings and point an SDK at this server.</p>
      ) : (
        <div class="grid2">
          <div class="card">
            <h2>Spend per day (USD, by model)</h2>
            <StackedBars label="Spend per day" columns={columns} series={series((d) => d.totals?.costUsd ?? 0)} format={usd} axisFormat={usdShort} />
          </div>
          <div class="card">
            <h2>Calls per day (by model)</h2>
            <StackedBars label="Calls per day" columns={columns} series={series((d) => Number(d.totals?.calls ?? 0))} format={(n) => count(Math.round(n))} />
          </div>
          <div class="card">
            <h2>Error rate per {trend.unit} (%)</h2>
            <StackedBars label={`Error rate per ${trend.unit}`} {...trend.axis} series={errorSeries} format={(n) => `${n.toFixed(1)}%`} stacked={false} />
          </div>
          <div class="card">
            <h2>Latency per {trend.unit}, p50 and p95 (ms, estimates)</h2>
            <StackedBars label={`Latency per ${trend.unit}`} {...trend.axis} series={latencySeries} format={(n) => ms(n)} stacked={false} />
          </div>
          <div class="card">
            <h2>Top models by spend</h2>
            <BarList
              rows={models.slice(0, 10).map((m) => ({
                label: `${m.provider} · ${m.model}`,
                value: m.totals?.costUsd ?? 0,
                text: `${usd(m.totals?.costUsd ?? 0)} · ${plural(m.totals?.calls ?? 0n, "call")}`,
                colour: modelColours.get(seriesKey(m)),
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

/** The trends of a view: per UTC hour for ranges of up to 48 hours, per UTC day for longer ones. */
interface Trend {
  unit: "hour" | "day";
  columns: string[];
  totals: Map<string, UsageTotals>;
  axis: { columns: string[]; columnName: string; columnLabel?: (column: string) => string };
}

const hourMs = 3_600_000;
/** An hour as the charts name it: `2026-11-26 16:00` (UTC). */
const hourColumn = (d: Date) => `${d.toISOString().slice(0, 13).replace("T", " ")}:00`;

async function trendOf(filters: Filters, filter: TraceFilter): Promise<Trend> {
  const { since, until } = bounds(filters);
  const end = until?.getTime() ?? Date.now();
  if (since && end - since.getTime() <= 48 * hourMs) {
    const columns: string[] = [];
    for (let h = Math.floor(since.getTime() / hourMs) * hourMs; h < Math.min(end, Date.now()); h += hourMs) columns.push(hourColumn(new Date(h)));
    const { hours } = await query.getUsageByHourTotals({ filter });
    const totals = new Map(hours.map((h) => [hourColumn(timestampDate(h.hour!)), h.totals!]));
    return { unit: "hour", columns, totals, axis: { columns, columnName: "Hour (UTC)", columnLabel: (c) => c.slice(11) } };
  }
  const { days } = await query.getUsageByDayTotals({ filter });
  const columns = dayRange(since ?? new Date(days[0]?.day ?? Date.now()), new Date());
  return { unit: "day", columns, totals: new Map(days.map((d) => [d.day, d.totals!])), axis: { columns, columnName: "Day (UTC)" } };
}

/** A model's series key, which also picks its colour (palette.ts). */
const seriesKey = (m: { provider: string; model: string }) => `${m.provider}\n${m.model}`;

const estimateNote = "An estimate: read from latency buckets 5% wide, at most 5% above the true value.";

function Tile({ label, value, id, note, change }: { label: string; value: string; id: string; note?: string; change?: string | undefined }) {
  return (
    <div class="tile" data-tile={id} title={note}>
      <span class="muted small">{label}</span>
      <strong>{value}</strong>
      {change && (
        <small class="change" data-change>
          {change} <span class="sr-only">against the previous period</span>
        </small>
      )}
    </div>
  );
}
