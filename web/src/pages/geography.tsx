import { useState } from "preact/hooks";
import { account, query } from "../api.js";
import { FilterBar } from "../components/filter-bar.js";
import { useCountryNames, WorldMap } from "../components/world-map.js";
import { QueryStatus } from "../components/query-status.js";
import { UrlNotice } from "../components/url-notice.js";
import { filtersFromQuery, filtersToQuery, queryProblems, traceFilter, type Filters } from "../filters.js";
import { count, percent, usd } from "../format.js";
import { navigate, projectBase, useLocation } from "../router.js";
import { useQuery } from "../use-query.js";

const refreshMs = 5000;

/** Where calls come from: countries of the client addresses at ingest (D16). */
export function Geography() {
  const { query: params } = useLocation();
  const filters = filtersFromQuery(params, "30d");
  const filterKey = filtersToQuery(filters);
  const [metric, setMetric] = useState<"calls" | "spend">("calls");
  const names = useCountryNames();
  const keys = useQuery(async () => (await account.listKeys({})).keys, []);
  const countries = useQuery(async () => (await query.getUsageByCountry({ filter: traceFilter(filters) })).countries, [filterKey], refreshMs);
  const change = (f: Filters) => navigate(`${projectBase()}geography?${filtersToQuery(f)}`);

  const rows = [...(countries.data ?? [])].sort((a, b) => (metric === "calls" ? Number(b.calls - a.calls) : b.costUsd - a.costUsd));
  const totalCalls = rows.reduce((sum, r) => sum + Number(r.calls), 0);
  const totalSpend = rows.reduce((sum, r) => sum + r.costUsd, 0);
  const values = new Map(rows.filter((r) => r.country).map((r) => [r.country, metric === "calls" ? Number(r.calls) : r.costUsd]));
  const format = metric === "calls" ? (n: number) => `${count(Math.round(n))} calls` : usd;

  return (
    <section>
      <div class="row between">
        <h1>Geography</h1>
        <div class="segmented" role="group" aria-label="Shade by">
          <button type="button" class={metric === "calls" ? "active" : ""} aria-pressed={metric === "calls"} onClick={() => setMetric("calls")}>
            Calls
          </button>
          <button type="button" class={metric === "spend" ? "active" : ""} aria-pressed={metric === "spend"} onClick={() => setMetric("spend")}>
            Spend
          </button>
        </div>
      </div>
      <UrlNotice problems={queryProblems(params)} />
      <FilterBar filters={filters} onChange={change} keys={keys.data ?? []} models={[]} />
      <QueryStatus state={countries} what="countries" />
      <div class="geo">
        <div class="card">
          <WorldMap values={values} format={format} />
          <p class="muted small">
            Map outlines: <a href="https://github.com/VictorCazanave/svg-maps">@svg-maps/world</a> by Victor Cazanave, CC BY 4.0. Country of each
            call: the CC0 geo-whois-asn-country database of @ip-location-db.
          </p>
        </div>
        <div class="card">
          <table class="countries">
            <thead>
              <tr>
                <th>Country</th>
                <th class="num">Calls</th>
                <th class="num">Spend (USD)</th>
                <th class="num">Share</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr data-country={r.country || "unknown"}>
                  <td>{r.country ? `${names.get(r.country) ?? r.country} (${r.country})` : "Unknown"}</td>
                  <td class="num">{count(r.calls)}</td>
                  <td class="num">{usd(r.costUsd)}</td>
                  <td class="num">{metric === "calls" ? percent(Number(r.calls), totalCalls) : percent(r.costUsd, totalSpend)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {countries.data && rows.length === 0 && <p class="muted pad">No traces in this period.</p>}
          <p class="muted small">Countries come from the client's IP address when the trace arrives; the address itself is never stored.</p>
        </div>
      </div>
    </section>
  );
}
