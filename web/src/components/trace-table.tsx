import type { ComponentChildren } from "preact";
import { TraceOrder } from "../../../gen/calltrace/v1/query_pb.js";
import type { StoredTrace } from "../../../gen/calltrace/v1/trace_pb.js";
import { count, dateTime, usd } from "../format.js";
import { Truncated } from "./truncated.js";

/** How the traces are sorted, as the address bar keeps it: `order=cost&asc=1`. Newest first when absent. */
export interface TraceSort {
  order: "time" | "cost" | "latency" | "tokens";
  ascending: boolean;
}

const orders = { time: TraceOrder.TIME, cost: TraceOrder.COST, latency: TraceOrder.LATENCY, tokens: TraceOrder.TOKENS } as const;

export function sortFromQuery(query: URLSearchParams): TraceSort {
  const order = query.get("order");
  return { order: order && Object.hasOwn(orders, order) ? (order as TraceSort["order"]) : "time", ascending: query.get("asc") === "1" };
}

export function sortToQuery(sort: TraceSort): string {
  if (sort.order === "time" && !sort.ascending) return "";
  return new URLSearchParams({ order: sort.order, ...(sort.ascending ? { asc: "1" } : {}) }).toString();
}

export function traceOrder(sort: TraceSort): { order: TraceOrder; ascending: boolean } {
  return { order: orders[sort.order], ascending: sort.ascending };
}

/** Columns a reader can switch on; the address bar keeps them (`cols=user,tags`). */
export const optionalColumns = [
  { id: "user", label: "User", cell: (t: StoredTrace) => t.userId ?? "" },
  { id: "session", label: "Session", cell: (t: StoredTrace) => t.sessionId ?? "" },
  { id: "tags", label: "Tags", cell: (t: StoredTrace) => t.tags.join(", ") },
  { id: "environment", label: "Environment", cell: (t: StoredTrace) => t.environment ?? "" },
  { id: "service", label: "Service", cell: (t: StoredTrace) => t.serviceName || t.metadata.service || "" },
  { id: "metadata", label: "Metadata", cell: (t: StoredTrace) => Object.entries(t.metadata).map(([k, v]) => `${k}=${v}`).join(", ") },
  { id: "ttft", label: "TTFT (ms)", cell: (t: StoredTrace) => (t.ttftMs === undefined ? "" : count(t.ttftMs)) },
] as const;

export type ColumnId = (typeof optionalColumns)[number]["id"];

export function columnsFromQuery(query: URLSearchParams): ColumnId[] {
  const wanted = new Set((query.get("cols") ?? "").split(","));
  return optionalColumns.filter((c) => wanted.has(c.id)).map((c) => c.id);
}

/**
 * The traces table (on a phone: time, model, latency, cost and status; the row opens the rest): a header per sortable column toggles its order (newest/largest first, then
 * the other way), optional columns for attribution, and rows that open the trace's details on
 * click or, focused, on Enter or Space.
 */
export function TraceTable({
  traces,
  sort,
  onSort,
  columns,
  keyName,
  selected,
  onOpen,
}: {
  traces: StoredTrace[];
  sort: TraceSort;
  onSort: (sort: TraceSort) => void;
  columns: ColumnId[];
  keyName: (keyId: string) => string;
  selected: string;
  onOpen: (id: string) => void;
}) {
  const header = (label: string, order: TraceSort["order"], numeric = true, title?: string, extra = ""): ComponentChildren => {
    const active = sort.order === order;
    const next = () => onSort({ order, ascending: active ? !sort.ascending : false });
    return (
      <th class={`${numeric ? "num" : ""} ${extra}`.trim()} aria-sort={active ? (sort.ascending ? "ascending" : "descending") : "none"} data-sort={order}>
        <button type="button" class="sort" onClick={next} title={title}>
          {label}
          <span aria-hidden="true">{active ? (sort.ascending ? " ▲" : " ▼") : ""}</span>
        </button>
      </th>
    );
  };
  const shown = optionalColumns.filter((c) => columns.includes(c.id));
  return (
    <table class="traces">
      <thead>
        <tr>
          {header("Time (UTC)", "time", false)}
          <th class="wide-only">Provider</th>
          <th>Model</th>
          {header("Tokens in", "tokens", true, "Sort by tokens in + out", "wide-only")}
          {header("Tokens out", "tokens", true, "Sort by tokens in + out", "wide-only")}
          {header("Latency (ms)", "latency")}
          {header("Cost (USD)", "cost")}
          <th>Status</th>
          <th class="wide-only">Error</th>
          {shown.map((c) => (
            <th data-column={c.id}>{c.label}</th>
          ))}
          <th class="wide-only">Country</th>
          <th class="wide-only">Key</th>
        </tr>
      </thead>
      <tbody>
        {traces.map((t) => (
          <tr
            data-trace-id={t.id}
            class={`clickable${t.id === selected ? " selected" : ""}`}
            tabIndex={0}
            aria-label={`Open trace ${t.id}`}
            onClick={() => onOpen(t.id)}
            onKeyDown={(e) => {
              if (e.key === "Enter" || e.key === " ") {
                e.preventDefault();
                onOpen(t.id);
              }
            }}
          >
            <td class="time">
              {/* Date and time may go on two lines on a phone, never broken inside either. */}
              <span>{dateTime(t.receivedAt).slice(0, 10)}</span> <span>{dateTime(t.receivedAt).slice(11, 19)}</span>
            </td>
            <td class="wide-only">{t.provider}</td>
            <td class="model">
              <Truncated text={t.model} />
            </td>
            <td class="num wide-only">{count(t.tokensIn)}</td>
            <td class="num wide-only">{count(t.tokensOut)}</td>
            <td class="num">{count(t.latencyMs)}</td>
            <td class="num">{usd(t.costUsd)}</td>
            <td>
              <span class={`status ${t.status}`}>{t.status}</span>
            </td>
            <td class="error-text wide-only">{t.error ? <Truncated text={t.error} /> : ""}</td>
            {shown.map((c) => (
              <td data-column={c.id}>{c.cell(t)}</td>
            ))}
            <td class="wide-only">{t.country || "—"}</td>
            <td class="muted small wide-only">
              <Truncated text={keyName(t.keyId)} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
