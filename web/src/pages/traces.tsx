import { useState } from "preact/hooks";
import { account, query } from "../api.js";
import { AttributeBar } from "../components/attribute-bar.js";
import { FilterBar } from "../components/filter-bar.js";
import { TraceDetail } from "../components/trace-detail.js";
import { columnsFromQuery, optionalColumns, sortFromQuery, sortToQuery, TraceTable, traceOrder, type ColumnId, type TraceSort } from "../components/trace-table.js";
import { attributesFromQuery, attributesToQuery, joinQuery, withAttributes, type Attributes } from "../attributes.js";
import { QueryStatus } from "../components/query-status.js";
import { UrlNotice } from "../components/url-notice.js";
import { downloadQuery, filtersFromQuery, filtersToQuery, modelsFilter, queryProblems, traceFilter, type Filters } from "../filters.js";
import { base, currentProjectId, navigate, projectBase, useLocation } from "../router.js";
import { useQuery } from "../use-query.js";

const pageSize = 50;
/** The first page refreshes on this interval so new traces appear; later pages stay put while read. */
const refreshMs = 5000;

export function Traces() {
  const { query: params } = useLocation();
  const filters = filtersFromQuery(params);
  const attributes = attributesFromQuery(params);
  const sort = sortFromQuery(params);
  const columns = columnsFromQuery(params);
  const opened = params.get("trace") ?? "";
  const filterKey = joinQuery(filtersToQuery(filters), attributesToQuery(attributes), sortToQuery(sort));
  // Cursors of the pages before the current one: keyset pagination stays fast however deep.
  const [cursors, setCursors] = useState<{ filterKey: string; stack: string[] }>({ filterKey, stack: [] });
  const stack = cursors.filterKey === filterKey ? cursors.stack : [];
  const cursor = stack[stack.length - 1] ?? "";

  const keys = useQuery(async () => (await account.listKeys({})).keys, []);
  const models = useQuery(async () => (await query.getUsageByModel({ filter: modelsFilter(filters) })).models.map((m) => m.model), [filters.range]);
  const page = useQuery(
    async () => (await query.listTraces({ filter: withAttributes(traceFilter(filters), attributes), pageSize, cursor, ...traceOrder(sort) })).page!,
    [filterKey, cursor],
    cursor === "" ? refreshMs : undefined,
  );
  const keyNames = new Map((keys.data ?? []).map((k) => [k.id, `${k.name || "(unnamed)"} · ct_${k.prefix}…`]));
  const keyName = (id: string) => keyNames.get(id) ?? id;
  const go = (f: Filters, a: Attributes, s: TraceSort, cols: ColumnId[], trace: string) =>
    navigate(
      `${projectBase()}traces?${joinQuery(filtersToQuery(f), attributesToQuery(a), sortToQuery(s), cols.length > 0 ? `cols=${cols.join(",")}` : "", trace ? `trace=${encodeURIComponent(trace)}` : "")}`,
    );
  const close = () => {
    go(filters, attributes, sort, columns, "");
    // Focus goes back to the row the panel was opened from.
    requestAnimationFrame(() => document.querySelector<HTMLElement>(`tr[data-trace-id="${CSS.escape(opened)}"]`)?.focus());
  };
  const download = joinQuery(`project=${encodeURIComponent(currentProjectId())}`, downloadQuery(filters), attributesToQuery(attributes));

  return (
    <section class={opened ? "with-detail" : ""}>
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
      <UrlNotice problems={queryProblems(params)} />
      <FilterBar filters={filters} onChange={(f) => go(f, attributes, sort, columns, "")} keys={keys.data ?? []} models={models.data ?? []} />
      <AttributeBar attributes={attributes} onChange={(a) => go(filters, a, sort, columns, "")} search />
      <details class="columns">
        <summary>Columns</summary>
        {optionalColumns.map((c) => (
          <label class="inline">
            <input
              type="checkbox"
              name={`column-${c.id}`}
              checked={columns.includes(c.id)}
              onChange={(e) => go(filters, attributes, sort, e.currentTarget.checked ? [...columns, c.id] : columns.filter((x) => x !== c.id), opened)}
            />
            {c.label}
          </label>
        ))}
      </details>
      <QueryStatus state={page} what="traces" />
      <div class="traces-layout">
        <div class="card table-wrap">
          <TraceTable
            traces={page.data?.traces ?? []}
            sort={sort}
            onSort={(s) => go(filters, attributes, s, columns, opened)}
            columns={columns}
            keyName={keyName}
            selected={opened}
            onOpen={(id) => go(filters, attributes, sort, columns, id)}
          />
          {page.data && page.data.traces.length === 0 && <p class="muted pad">No traces match these filters.</p>}
        </div>
        {opened && <TraceDetail id={opened} keyName={keyName} onClose={close} />}
      </div>
      <div class="row pager">
        <button type="button" disabled={stack.length === 0} onClick={() => setCursors({ filterKey, stack: stack.slice(0, -1) })}>
          ← {sort.order === "time" && !sort.ascending ? "Newer" : "Previous"}
        </button>
        <span class="muted">Page {stack.length + 1}</span>
        <button type="button" disabled={!page.data?.nextCursor} onClick={() => setCursors({ filterKey, stack: [...stack, page.data!.nextCursor] })}>
          {sort.order === "time" && !sort.ascending ? "Older" : "Next"} →
        </button>
      </div>
    </section>
  );
}
