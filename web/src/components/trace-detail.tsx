import type { ComponentChildren } from "preact";
import { useEffect, useLayoutEffect, useRef } from "preact/hooks";
import { PriceCheck, TraceSource, type StoredTrace } from "../../../gen/calltrace/v1/trace_pb.js";
import { query } from "../api.js";
import { count, dateTime, ms, usd } from "../format.js";
import { projectBase } from "../router.js";
import { useQuery } from "../use-query.js";

const priceChecks: Record<PriceCheck, string> = {
  [PriceCheck.UNSPECIFIED]: "not checked (stored before the server priced calls)",
  [PriceCheck.MATCH]: "matches the client's cost (within 1 %)",
  [PriceCheck.MISMATCH]: "differs from the client's cost by more than 1 %",
  [PriceCheck.UNPRICED]: "model not in the server's price table",
  [PriceCheck.SERVER]: "priced by the server (the span carried no cost)",
};

const sources: Record<TraceSource, string> = {
  [TraceSource.UNSPECIFIED]: "—",
  [TraceSource.API]: "calltrace API (SDK or REST)",
  [TraceSource.OTLP]: "OpenTelemetry (OTLP)",
};

/** A link to the traces of everything matching `params`, over all time. */
const tracesLink = (params: Record<string, string>) => `${projectBase()}traces?${new URLSearchParams({ range: "all", ...params })}`;

/**
 * Every field of one trace, beside the table it was opened from: the full error text, tags,
 * metadata, the server's own price, and links to the other calls of its session, its OTLP trace
 * and its user. Escape or Close shuts it; focus moves into it when it opens.
 */
export function TraceDetail({ id, keyName, onClose }: { id: string; keyName: (keyId: string) => string; onClose: () => void }) {
  const trace = useQuery(async () => (await query.getTrace({ id })).trace, [id]);
  const heading = useRef<HTMLHeadingElement>(null);
  // In the commit that shows the panel, not after the next paint: focus is never left behind on the row.
  useLayoutEffect(() => heading.current?.focus(), [id]);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && onClose();
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, [onClose]);

  return (
    <aside class="trace-detail card" role="dialog" aria-modal="false" aria-labelledby="trace-detail-title" data-trace-detail={id}>
      <div class="row between">
        <h2 id="trace-detail-title" tabIndex={-1} ref={heading}>
          Trace <code>{id}</code>
        </h2>
        <button type="button" onClick={onClose} aria-label="Close trace details">
          Close
        </button>
      </div>
      {trace.error && <p class="error">{trace.error}</p>}
      {trace.loading && !trace.data && <p class="muted">Loading…</p>}
      {trace.data && <Fields t={trace.data} keyName={keyName} />}
    </aside>
  );
}

function Fields({ t, keyName }: { t: StoredTrace; keyName: (keyId: string) => string }) {
  const metadata = Object.entries(t.metadata).sort(([a], [b]) => (a < b ? -1 : 1));
  return (
    <>
      <dl class="fields">
        <Field name="Time">{dateTime(t.receivedAt)}</Field>
        <Field name="Status">
          <span class={`status ${t.status}`}>{t.status}</span>
        </Field>
        <Field name="Provider">{t.provider}</Field>
        <Field name="Model">
          <span class="wrap">{t.model}</span>
        </Field>
        <Field name="Cost (client)" id="cost">
          {usd(t.costUsd)}
        </Field>
        {t.serverCostUsd !== undefined && (
          <Field name="Cost (server)" id="server-cost">
            {usd(t.serverCostUsd)}
          </Field>
        )}
        <Field name="Price check">{priceChecks[t.priceCheck] ?? "—"}</Field>
        <Field name="Tokens in / out">
          {count(t.tokensIn)} / {count(t.tokensOut)}
        </Field>
        {t.tokensCachedIn !== undefined && <Field name="Cached input tokens">{count(t.tokensCachedIn)}</Field>}
        {t.tokensCacheWrite !== undefined && <Field name="Cache-write tokens">{count(t.tokensCacheWrite)}</Field>}
        {t.tokensReasoning !== undefined && <Field name="Reasoning tokens">{count(t.tokensReasoning)}</Field>}
        <Field name="Latency">{ms(t.latencyMs)}</Field>
        {t.ttftMs !== undefined && <Field name="Time to first token">{ms(t.ttftMs)}</Field>}
        <Field name="User" id="user">
          {t.userId ? (
            <>
              <code>{t.userId}</code> · <a href={tracesLink({ user: t.userId })}>more from this user</a>
            </>
          ) : (
            "—"
          )}
        </Field>
        <Field name="Session" id="session">
          {t.sessionId ? (
            <>
              <code>{t.sessionId}</code> · <a href={tracesLink({ session: t.sessionId, order: "time", asc: "1" })}>other calls of this session</a>
            </>
          ) : (
            "—"
          )}
        </Field>
        <Field name="Environment">{t.environment || "—"}</Field>
        <Field name="Service">{t.serviceName || t.metadata.service || "—"}</Field>
        <Field name="Tags" id="tags">
          {t.tags.length === 0
            ? "—"
            : t.tags.map((tag) => (
                <a class="chip" href={tracesLink({ tag })}>
                  {tag}
                </a>
              ))}
        </Field>
        <Field name="Key">{keyName(t.keyId)}</Field>
        <Field name="Country">{t.country || "—"}</Field>
        <Field name="Source">{sources[t.source] ?? "—"}</Field>
        {t.otlpTraceId && (
          <Field name="OTLP trace" id="otlp">
            <code>{t.otlpTraceId}</code> · <a href={tracesLink({ otlp: t.otlpTraceId, order: "time", asc: "1" })}>other spans of this trace</a>
            <br />
            <span class="muted small">
              span <code>{t.otlpSpanId}</code>
              {t.otlpParentSpanId ? (
                <>
                  , parent <code>{t.otlpParentSpanId}</code>
                </>
              ) : (
                " (root)"
              )}
            </span>
          </Field>
        )}
      </dl>
      {metadata.length > 0 && (
        <>
          <h3>Metadata</h3>
          <table class="metadata" data-field="metadata">
            <tbody>
              {metadata.map(([k, v]) => (
                <tr>
                  <th scope="row">
                    <code>{k}</code>
                  </th>
                  <td class="wrap">{v}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      {t.error !== undefined && (
        <>
          <h3>Error</h3>
          <pre class="error-full" data-field="error">
            {t.error}
          </pre>
        </>
      )}
    </>
  );
}

function Field({ name, id, children }: { name: string; id?: string; children: ComponentChildren }) {
  return (
    <div data-field={id}>
      <dt>{name}</dt>
      <dd>{children}</dd>
    </div>
  );
}
