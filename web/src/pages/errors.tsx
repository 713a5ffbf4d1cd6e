import type { ErrorGroup, ValueCount } from "../../../gen/calltrace/v1/query_pb.js";
import { account, query } from "../api.js";
import { attributesFromQuery, attributesToQuery, joinQuery, withAttributes, type Attributes } from "../attributes.js";
import { AttributeBar } from "../components/attribute-bar.js";
import { FilterBar } from "../components/filter-bar.js";
import { QueryStatus } from "../components/query-status.js";
import { UrlNotice } from "../components/url-notice.js";
import { filtersFromQuery, filtersToQuery, queryProblems, traceFilter, type Filters } from "../filters.js";
import { count, dateTime, percent, plural, usd } from "../format.js";
import { navigate, projectBase, useLocation } from "../router.js";
import { useQuery } from "../use-query.js";

const refreshMs = 10_000;

/** Why calls fail: failed calls grouped by their masked message, most first (D55). */
export function Errors() {
  const { query: params } = useLocation();
  const filters = filtersFromQuery(params, "7d");
  const attributes = attributesFromQuery(params);
  const filterKey = joinQuery(filtersToQuery(filters), attributesToQuery(attributes));
  const keys = useQuery(async () => (await account.listKeys({})).keys, []);
  const groups = useQuery(
    async () => query.getErrorGroups({ filter: withAttributes(traceFilter(filters), attributes), limit: 50 }),
    [filterKey],
    refreshMs,
  );
  const keyNames = new Map((keys.data ?? []).map((k) => [k.id, k.name || `ct_${k.prefix}…`]));
  const go = (f: Filters, a: Attributes) => navigate(`${projectBase()}errors?${joinQuery(filtersToQuery(f), attributesToQuery(a))}`);
  const tracesOf = (group: ErrorGroup) =>
    `${projectBase()}traces?${joinQuery(filtersToQuery({ ...filters, status: "error" }), attributesToQuery({ ...attributes, errorGroup: group.id }))}`;
  const data = groups.data;

  return (
    <section>
      <h1>Errors</h1>
      <UrlNotice problems={queryProblems(params)} />
      <FilterBar filters={filters} onChange={(f) => go(f, attributes)} keys={keys.data ?? []} models={[]} />
      <AttributeBar attributes={attributes} onChange={(a) => go(filters, a)} />
      <QueryStatus state={groups} what="error groups" />
      {data && (
        <p class="muted" data-error-summary>
          {plural(data.totalErrors, "failed call")} in {plural(data.totalGroups, "group")}
          {data.totalGroups > BigInt(data.groups.length) ? `, the ${data.groups.length} largest shown` : ""}. Numbers, ids, UUIDs, hex, e-mail
          addresses and quoted values are masked, so failures of one kind group together.
        </p>
      )}
      {data && data.groups.length === 0 && <p class="muted pad card">No failed calls in this view.</p>}
      <ol class="error-groups">
        {(data?.groups ?? []).map((g) => (
          <li class="card error-group" data-error-group={g.id}>
            <code class="error-message">{g.message}</code>
            <dl class="error-figures">
              <div>
                <dt>Calls</dt>
                <dd>{count(g.calls)}</dd>
              </div>
              <div>
                <dt>Share of failures</dt>
                <dd>{percent(g.share, 1)}</dd>
              </div>
              <div>
                <dt>Spend</dt>
                <dd>{usd(g.costUsd)}</dd>
              </div>
              <div>
                <dt>First seen</dt>
                <dd>{dateTime(g.firstSeen)}</dd>
              </div>
              <div>
                <dt>Last seen</dt>
                <dd>{dateTime(g.lastSeen)}</dd>
              </div>
            </dl>
            <dl class="error-affected">
              <Affected label="Models" values={g.models} total={g.modelCount} />
              <Affected label="Keys" values={g.keys} total={g.keyCount} name={(id) => keyNames.get(id) ?? id} />
              <Affected label="Users" values={g.users} total={g.userCount} />
            </dl>
            <a href={tracesOf(g)}>View the {plural(g.calls, "call")}</a>
          </li>
        ))}
      </ol>
    </section>
  );
}

/** The values most affected, and how many there were in all. */
function Affected({ label, values, total, name = (v) => v }: { label: string; values: ValueCount[]; total: bigint; name?: (value: string) => string }) {
  return (
    <div>
      <dt>{label}</dt>
      <dd>
        {values.length === 0
          ? "—"
          : values.map((v, i) => (
              <>
                {i > 0 && ", "}
                <span class="affected" title={name(v.value)}>
                  {name(v.value)}
                </span> ({count(v.calls)})
              </>
            ))}
        {total > BigInt(values.length) ? ` and ${count(total - BigInt(values.length))} more` : ""}
      </dd>
    </div>
  );
}
