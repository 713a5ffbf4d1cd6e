import { useState } from "preact/hooks";
import { account, query } from "../api.js";
import { FilterBar } from "../components/filter-bar.js";
import { downloadQuery, filtersFromQuery, filtersToQuery, traceFilter, type Filters } from "../filters.js";
import { count, dateTime, usdPrecise } from "../format.js";
import { base, navigate, useLocation } from "../router.js";
import { useQuery } from "../use-query.js";

const pageSize = 50;
/** The first page refreshes on this interval so new traces appear; later pages stay put while read. */
const refreshMs = 5000;

export function Traces() {
  const { query: params } = useLocation();
  const filters = filtersFromQuery(params);
  const filterKey = filtersToQuery(filters);
  // Cursors of the pages before the current one: keyset pagination stays fast however deep.
  const [cursors, setCursors] = useState<{ filterKey: string; stack: string[] }>({ filterKey, stack: [] });
  const stack = cursors.filterKey === filterKey ? cursors.stack : [];
  const cursor = stack[stack.length - 1] ?? "";

  const keys = useQuery(async () => (await account.listKeys({})).keys, []);
  const models = useQuery(async () => (await query.getUsageByModel({ filter: { since: traceFilter(filters).since } })).models.map((m) => m.model), [filters.range]);
  const page = useQuery(
    async () => (await query.listTraces({ filter: traceFilter(filters), pageSize, cursor })).page!,
    [filterKey, cursor],
    cursor === "" ? refreshMs : undefined,
  );
  const keyNames = new Map((keys.data ?? []).map((k) => [k.id, `${k.name || "(unnamed)"} · ct_${k.prefix}…`]));
  const change = (f: Filters) => navigate(`${base}traces?${filtersToQuery(f)}`);
  const download = downloadQuery(filters);

  return (
    <section>
      <div class="row between">
        <h1>Traces</h1>
        <div class="row">
          <a class="button" href={`${base}export/traces.csv?${download}`} download>
            Download CSV
          </a>
          <a class="button" href={`${base}export/traces.jsonl?${download}`} download>
            Download JSONL
          </a>
        </div>
      </div>
      <FilterBar filters={filters} onChange={change} keys={keys.data ?? []} models={models.data ?? []} />
      {page.error && <p class="error">{page.error}</p>}
      <div class="card table-wrap">
        <table class="traces">
          <thead>
            <tr>
              <th>Time</th>
              <th>Provider</th>
              <th>Model</th>
              <th class="num">Tokens in</th>
              <th class="num">Tokens out</th>
              <th class="num">Latency (ms)</th>
              <th class="num">Cost (USD)</th>
              <th>Status</th>
              <th>Error</th>
              <th>Country</th>
              <th>Key</th>
            </tr>
          </thead>
          <tbody>
            {(page.data?.traces ?? []).map((t) => (
              <tr data-trace-id={t.id}>
                <td class="nowrap">{dateTime(t.receivedAt)}</td>
                <td>{t.provider}</td>
                <td>{t.model}</td>
                <td class="num">{count(t.tokensIn)}</td>
                <td class="num">{count(t.tokensOut)}</td>
                <td class="num">{count(t.latencyMs)}</td>
                <td class="num">{usdPrecise(t.costUsd)}</td>
                <td>
                  <span class={`status ${t.status}`}>{t.status}</span>
                </td>
                <td class="error-text" title={t.error ?? ""}>
                  {t.error ?? ""}
                </td>
                <td>{t.country || "—"}</td>
                <td class="muted small">{keyNames.get(t.keyId) ?? t.keyId}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {page.data && page.data.traces.length === 0 && <p class="muted pad">No traces match these filters.</p>}
      </div>
      <div class="row pager">
        <button type="button" disabled={stack.length === 0} onClick={() => setCursors({ filterKey, stack: stack.slice(0, -1) })}>
          ← Newer
        </button>
        <span class="muted">Page {stack.length + 1}</span>
        <button type="button" disabled={!page.data?.nextCursor} onClick={() => setCursors({ filterKey, stack: [...stack, page.data!.nextCursor] })}>
          Older →
        </button>
      </div>
    </section>
  );
}
