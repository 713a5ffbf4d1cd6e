import { RunOrder, type RunSummary } from "../../../gen/calltrace/v1/query_pb.js";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { account, query } from "../api.js";
import { attributesFromQuery, attributesToQuery, joinQuery, withAttributes, type Attributes } from "../attributes.js";
import { AttributeBar } from "../components/attribute-bar.js";
import { FilterBar } from "../components/filter-bar.js";
import { QueryStatus } from "../components/query-status.js";
import { UrlNotice } from "../components/url-notice.js";
import { filtersFromQuery, filtersToQuery, queryProblems, traceFilter, type Filters } from "../filters.js";
import { count, dateTime, usd } from "../format.js";
import { navigate, projectBase, useLocation } from "../router.js";
import { useQuery } from "../use-query.js";

const refreshMs = 10_000;
type Order = "recent" | "cost";

/** A run's name as shown: its session id, or the start of its OTLP trace id. */
export function runName(id: string): string {
  return id.startsWith("otlp:") ? `trace ${id.slice(5, 13)}…` : `session ${id.slice(8)}`;
}

/** A duration as `850 ms`, `12.4 s` or `3 min 5 s`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export const runDuration = (run: RunSummary) => timestampMs(run.end!) - timestampMs(run.start!);

/** Agent runs: calls that share an OTLP trace id, or else a session id (D55). */
export function Runs() {
  const { query: params } = useLocation();
  const filters = filtersFromQuery(params, "7d");
  const attributes = attributesFromQuery(params);
  const order: Order = params.get("sort") === "cost" ? "cost" : "recent";
  const filterKey = joinQuery(filtersToQuery(filters), attributesToQuery(attributes));
  const keys = useQuery(async () => (await account.listKeys({})).keys, []);
  const runs = useQuery(
    async () =>
      (
        await query.listRuns({
          filter: withAttributes(traceFilter(filters), attributes),
          order: order === "cost" ? RunOrder.COST : RunOrder.UNSPECIFIED,
          limit: 100,
        })
      ).runs,
    [filterKey, order],
    refreshMs,
  );
  const go = (f: Filters, a: Attributes, o: Order) =>
    navigate(`${projectBase()}runs?${joinQuery(filtersToQuery(f), attributesToQuery(a), o === "cost" ? "sort=cost" : "")}`);
  const runLink = (id: string) => `${projectBase()}runs/${encodeURIComponent(id)}`;

  return (
    <section>
      <div class="row between">
        <h1>Runs</h1>
        <div class="segmented" role="group" aria-label="Sort runs by">
          <button type="button" class={order === "recent" ? "active" : ""} aria-pressed={order === "recent"} onClick={() => go(filters, attributes, "recent")}>
            Most recent
          </button>
          <button type="button" class={order === "cost" ? "active" : ""} aria-pressed={order === "cost"} onClick={() => go(filters, attributes, "cost")}>
            Highest cost
          </button>
        </div>
      </div>
      <UrlNotice problems={queryProblems(params)} />
      <FilterBar filters={filters} onChange={(f) => go(f, attributes, order)} keys={keys.data ?? []} models={[]} />
      <AttributeBar attributes={attributes} onChange={(a) => go(filters, a, order)} />
      <p class="muted small">
        A run is the calls that share an OpenTelemetry trace id, or else a session id. Unfiltered, a run's figures are the whole run's; with
        a filter, those of its matching calls.
      </p>
      <QueryStatus state={runs} what="runs" />
      <div class="card table-wrap">
        <table class="runs">
          <thead>
            <tr>
              <th>Run</th>
              <th class="num">Calls</th>
              <th class="num">Cost</th>
              <th class="num wide-only">Tokens</th>
              <th class="wide-only">Start</th>
              <th class="num">Duration</th>
              <th class="num">Errors</th>
            </tr>
          </thead>
          <tbody>
            {(runs.data ?? []).map((r) => (
              <tr data-run-id={r.id}>
                <td>
                  <a href={runLink(r.id)} class="run-name" title={runName(r.id)}>
                    {runName(r.id)}
                  </a>
                </td>
                <td class="num">{count(r.calls)}</td>
                <td class="num">{usd(r.costUsd)}</td>
                <td class="num wide-only">{count(r.tokensIn + r.tokensOut)}</td>
                <td class="wide-only time">{dateTime(r.start)}</td>
                <td class="num">{duration(runDuration(r))}</td>
                <td class={`num${r.errors > 0n ? " bad" : ""}`}>{count(r.errors)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {runs.data && runs.data.length === 0 && <p class="muted pad">No runs in this view: no call carried an OpenTelemetry trace id or a session id.</p>}
      </div>
    </section>
  );
}
