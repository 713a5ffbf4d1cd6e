import { Dimension, TraceOrder, type GroupUsage } from "../../../gen/calltrace/v1/query_pb.js";
import { account, query } from "../api.js";
import { AttributeBar } from "../components/attribute-bar.js";
import { FilterBar } from "../components/filter-bar.js";
import { StackedBars } from "../components/stacked-bars.js";
import {
  attributesForGroup,
  attributesFromQuery,
  attributesToQuery,
  dimensions,
  joinQuery,
  withAttributes,
  type Attributes,
  type DimensionId,
} from "../attributes.js";
import { dayRange } from "../days.js";
import { bounds, filtersFromQuery, filtersToQuery, traceFilter, type Filters } from "../filters.js";
import { count, dateTime, ms, percent, usd, usdShort } from "../format.js";
import { navigate, projectBase, useLocation } from "../router.js";
import { QueryStatus } from "../components/query-status.js";
import { useQuery } from "../use-query.js";

/** Groups in the ranked table, and how many of the top ones the chart draws. */
const tableSize = 50;
const chartSize = 5;
/** The group of the values past the server's bound on distinct values per day (GROUP_VALUES_PER_DAY, D54). */
const otherLabel = "(other)";
const otherTitle = "Values sent on a day after the server's bound on distinct values per day was reached, counted together";

/**
 * Who and what spent it: usage grouped by one dimension (user, tag, a metadata key, ...), ranked
 * by spend, the top groups' spend per day, and the most expensive calls. Clicking a group narrows
 * everything to it and groups by the next dimension: users, then their tags.
 */
export function Attribution() {
  const { query: params } = useLocation();
  const filters = filtersFromQuery(params, "30d");
  const attributes = attributesFromQuery(params);
  const dim = (dimensions.find((d) => d.id === params.get("dim"))?.id ?? "user") as DimensionId;
  const filter = withAttributes(traceFilter(filters), attributes);
  const filterKey = joinQuery(filtersToQuery(filters), attributesToQuery(attributes));

  const keys = useQuery(async () => (await account.listKeys({})).keys, []);
  // Only the metadata view shows its keys: elsewhere their group-by would read every call of the
  // filter for nothing (a user's calls are a table row each, D83).
  const keysShown = dim === "metadata";
  const metadataKeys = useQuery(
    async () =>
      keysShown
        ? (await query.getUsageByGroup({ filter, dimension: Dimension.METADATA_KEY, limit: 100 })).groups
            .filter((g) => !g.other && g.value !== "")
            .map((g) => g.value)
        : undefined,
    [filterKey, keysShown],
  );
  // `mkey`, not `key`: `key` is the API-key filter of every page.
  const metadataKey = dim === "metadata" ? params.get("mkey") || metadataKeys.data?.[0] || "" : "";
  const waiting = dim === "metadata" && metadataKey === "";
  const groups = useQuery(async () => {
    if (waiting) return undefined;
    const proto = dimensions.find((d) => d.id === dim)!.proto;
    const answer = await query.getUsageByGroup({ filter, dimension: proto, metadataKey, limit: tableSize });
    const top = answer.groups.slice(0, chartSize).map((g) => ({ value: g.value, other: g.other }));
    const values = top.filter((g) => !g.other).map((g) => g.value);
    const other = top.some((g) => g.other);
    // The request names at least one value: the other group alone asks for the traces without one too, left out of the chart.
    const days =
      top.length === 0
        ? []
        : (await query.getUsageByGroupAndDay({ filter, dimension: proto, metadataKey, values: values.length > 0 ? values : [""], other })).days;
    return { ...answer, top, days };
  }, [filterKey, dim, metadataKey]);
  const costly = useQuery(async () => (await query.listTraces({ filter, pageSize: 5, order: TraceOrder.COST })).page?.traces ?? [], [filterKey]);

  const keyNames = new Map((keys.data ?? []).map((k) => [k.id, k.name || `ct_${k.prefix}…`]));
  const label = (value: string) => (value === "" ? "(none)" : dim === "key" ? (keyNames.get(value) ?? value) : value);
  const groupLabel = (g: Pick<GroupUsage, "value" | "other">) => (g.other ? otherLabel : label(g.value));
  const go = (f: Filters, a: Attributes, d: DimensionId, key = "") =>
    navigate(`${projectBase()}attribution?${joinQuery(filtersToQuery(f), attributesToQuery(a), `dim=${d}`, key ? `mkey=${encodeURIComponent(key)}` : "")}`);
  const open = (value: string) => {
    const narrowed = attributesForGroup(attributes, dim, metadataKey, value);
    if (!narrowed) return;
    go(filters, narrowed, dim === "user" ? "tag" : "user");
  };
  const tracesOf = (a: Attributes, extra = "") => `${projectBase()}traces?${joinQuery(filtersToQuery(filters), attributesToQuery(a), "order=cost", extra)}`;

  const total = (groups.data?.groups ?? []).reduce((sum, g) => sum + (g.totals?.costUsd ?? 0), 0);
  const { since } = bounds(filters);
  const firstDay = since ?? (groups.data?.days[0] ? new Date(groups.data.days[0].day) : new Date());
  const columns = dayRange(firstDay, new Date());
  const series = (groups.data?.top ?? []).map((g) => ({
    name: groupLabel(g),
    values: columns.map((day) =>
      groups.data!.days.filter((d) => d.day === day && d.other === g.other && d.value === g.value).reduce((s, d) => s + d.costUsd, 0),
    ),
  }));
  const dimLabel = dimensions.find((d) => d.id === dim)!.label;
  // Only tags overlap: a trace has one user, session, ... but may carry several tags.
  const overlapping = dim === "tag";

  return (
    <section class="attribution">
      <h1>Attribution</h1>
      <FilterBar filters={filters} onChange={(f) => go(f, attributes, dim, metadataKey)} keys={keys.data ?? []} models={[]} />
      <AttributeBar attributes={attributes} onChange={(a) => go(filters, a, dim, metadataKey)} />
      <div class="row">
        <div class="segmented" role="group" aria-label="Group by">
          {dimensions.map((d) => (
            <button type="button" class={d.id === dim ? "active" : ""} aria-pressed={d.id === dim} data-dimension={d.id} onClick={() => go(filters, attributes, d.id)}>
              {d.label}
            </button>
          ))}
        </div>
        {dim === "metadata" && (
          <label class="inline">
            Key
            <select name="metadata-key" value={metadataKey} onChange={(e) => go(filters, attributes, "metadata", e.currentTarget.value)}>
              {(metadataKeys.data ?? []).map((k) => (
                <option value={k}>{k}</option>
              ))}
            </select>
          </label>
        )}
      </div>
      <QueryStatus state={groups} what="the groups" />
      {waiting && metadataKeys.data && <p class="muted card">No trace in this view carries metadata.</p>}
      {groups.data && (
        <>
          <div class="card">
            <h2>
              Spend per day, top {Math.min(chartSize, groups.data.top.length)} by {dimLabel.toLowerCase()}
              {overlapping && <span class="muted small"> (side by side, not stacked: a call with several tags counts in each, so they do not add up)</span>}
            </h2>
            {series.length === 0 ? (
              <p class="muted">No calls in this view.</p>
            ) : (
              <StackedBars label={`Spend per day by ${dimLabel}`} columns={columns} series={series} format={usd} axisFormat={usdShort} stacked={!overlapping} />
            )}
          </div>
          <div class="card table-wrap">
            <h2 class="pad">
              {dimLabel}s by spend{" "}
              <span class="muted small">
                ({count(groups.data.totalGroups)} in all{groups.data.totalGroups > BigInt(tableSize) ? `, the top ${tableSize} shown` : ""}; p50 and p95 are estimates from latency buckets, at most 5% high)
              </span>
              {groups.data.wholeDays && (
                <span class="muted small" data-whole-days="">
                  {" "}
                  Counted over whole UTC days: the range's first or last day had too many calls to group in time.
                </span>
              )}
            </h2>
            <table class="groups" data-groups={dim}>
              <thead>
                <tr>
                  <th class="num wide-only">#</th>
                  <th>{dimLabel}</th>
                  <th class="num">Spend</th>
                  <th class="num">Share</th>
                  <th class="num">Calls</th>
                  <th class="num wide-only">Tokens in / out</th>
                  <th class="num wide-only">Error rate</th>
                  <th class="num wide-only">p50 ≈</th>
                  <th class="num wide-only">p95 ≈</th>
                  <th>
                    <span class="sr-only">Traces</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {groups.data.groups.map((g, i) => {
                  const t = g.totals!;
                  const narrowed = g.other ? undefined : attributesForGroup(attributes, dim, metadataKey, g.value);
                  return (
                    <tr data-group={g.other ? otherLabel : g.value} data-other={g.other ? "" : undefined} title={g.other ? otherTitle : undefined}>
                      <td class="num wide-only">{i + 1}</td>
                      <td class="group-value">
                        {narrowed ? (
                          <button type="button" class="link group" onClick={() => open(g.value)} title={`Show only ${label(g.value)}`}>
                            {label(g.value)}
                          </button>
                        ) : (
                          <span class={g.value === "" ? "muted" : ""}>{groupLabel(g)}</span>
                        )}
                      </td>
                      <td class="num" data-cell="spend">
                        {usd(t.costUsd)}
                      </td>
                      <td class="num">{percent(t.costUsd, total)}</td>
                      <td class="num">{count(t.calls)}</td>
                      <td class="num wide-only">
                        {count(t.tokensIn)} / {count(t.tokensOut)}
                      </td>
                      <td class="num wide-only">{percent(Number(t.errors), Number(t.calls))}</td>
                      <td class="num wide-only">{ms(t.latencyP50Ms)}</td>
                      <td class="num wide-only">{ms(t.latencyP95Ms)}</td>
                      <td class="nowrap">{narrowed && <a href={tracesOf(narrowed)}>calls →</a>}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        </>
      )}
      <div class="card">
        <h2>Most expensive calls in this view</h2>
        <ol class="costly">
          {(costly.data ?? []).map((t) => (
            <li>
              <a href={tracesOf(attributes, `trace=${encodeURIComponent(t.id)}`)} data-costly={t.id}>
                {usd(t.costUsd)} · {t.model}
              </a>{" "}
              <span class="muted small">
                {dateTime(t.receivedAt)}
                {t.userId ? ` · ${t.userId}` : ""}
                {t.tags.length > 0 ? ` · ${t.tags.join(", ")}` : ""}
              </span>
            </li>
          ))}
        </ol>
        {costly.data && costly.data.length === 0 && <p class="muted">No calls in this view.</p>}
      </div>
    </section>
  );
}
