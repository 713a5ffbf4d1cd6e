import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { StoredTrace } from "../../../gen/calltrace/v1/trace_pb.js";
import { callSpanMs } from "../../../src/store/run-id.js";
import { query } from "../api.js";
import { QueryStatus } from "../components/query-status.js";
import { count, dateTime, usd } from "../format.js";
import { projectBase, useLocation } from "../router.js";
import { useQuery } from "../use-query.js";
import { duration, runDuration, runName } from "./runs.js";

/** When a call started and ended: at its call time if the trace says it, else received as it ended. */
function span(call: StoredTrace): { start: number; end: number } {
  return callSpanMs(timestampMs(call.calledAt ?? call.receivedAt!), call.latencyMs, call.calledAt !== undefined);
}

/** One run: its totals, and its calls on a timeline by start and end (a waterfall). */
export function Run() {
  const id = decodePart(useLocation().path.slice("/runs/".length));
  const run = useQuery(async () => query.getRun({ id }), [id]);
  const detail = run.data;
  const summary = detail?.run;
  const start = summary ? timestampMs(summary.start!) : 0;
  const total = summary ? Math.max(1, runDuration(summary)) : 1;
  const traceLink = (call: StoredTrace) => {
    const scope = id.startsWith("otlp:") ? `otlp=${id.slice(5)}` : `session=${encodeURIComponent(id.slice(8))}`;
    return `${projectBase()}traces?range=all&${scope}&trace=${encodeURIComponent(call.id)}`;
  };

  return (
    <section>
      <p>
        <a href={`${projectBase()}runs`}>← Runs</a>
      </p>
      <h1 class="run-title">Run: {runName(id)}</h1>
      <QueryStatus state={run} what="the run" />
      {summary && (
        <dl class="run-figures card">
          <div>
            <dt>Calls</dt>
            <dd>{count(summary.calls)}</dd>
          </div>
          <div>
            <dt>Cost</dt>
            <dd>{usd(summary.costUsd)}</dd>
          </div>
          <div>
            <dt>Tokens in / out</dt>
            <dd>
              {count(summary.tokensIn)} / {count(summary.tokensOut)}
            </dd>
          </div>
          <div>
            <dt>Errors</dt>
            <dd>{count(summary.errors)}</dd>
          </div>
          <div>
            <dt>Start</dt>
            <dd>{dateTime(summary.start)}</dd>
          </div>
          <div>
            <dt>Duration</dt>
            <dd>{duration(runDuration(summary))}</dd>
          </div>
        </dl>
      )}
      {detail && (
        <div class="card">
          <h2>Timeline</h2>
          {detail.truncated && <p class="muted">The first {detail.calls.length} calls are shown.</p>}
          <ol class="waterfall" aria-label="Calls by start time">
            {detail.calls.map((call) => {
              const { start: s, end: e } = span(call);
              const left = (100 * (s - start)) / total;
              const width = (100 * (e - s)) / total;
              return (
                <li data-call={call.id} class={call.status === "error" ? "failed" : ""}>
                  <a href={traceLink(call)} class="waterfall-label">
                    <span class="truncate">{call.model}</span>
                    <span class="muted small">
                      +{duration(s - start)} · {duration(call.latencyMs)} · {usd(call.costUsd)}
                      {call.status === "error" ? " · failed" : ""}
                    </span>
                  </a>
                  <span class="waterfall-track" aria-hidden="true">
                    <span class="waterfall-bar" style={{ left: `${left}%`, width: `max(${width}%, 2px)` }} />
                  </span>
                </li>
              );
            })}
          </ol>
        </div>
      )}
    </section>
  );
}

function decodePart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
