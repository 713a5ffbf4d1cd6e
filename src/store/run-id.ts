/**
 * A run is the calls that share an OTLP trace id or, for calls without one, a session id (D59).
 * Its id names which: `otlp:<32 hex digits>` or `session:<session id>`.
 */
export type RunKey = { otlpTraceId: string } | { sessionId: string };

/** The run a call belongs to; undefined when it has neither id. */
export function runIdOf(otlpTraceId: string | null | undefined, sessionId: string | null | undefined): string | undefined {
  if (otlpTraceId) return `otlp:${otlpTraceId}`;
  if (sessionId) return `session:${sessionId}`;
  return undefined;
}

/** The longest run id GetRun takes (`session:` and a session id of up to 256 characters, with room). */
export const maxRunId = 300;

/** The ids a run id names; undefined for a malformed one. */
export function parseRunId(id: string): RunKey | undefined {
  if (/^otlp:[0-9a-f]{32}$/.test(id)) return { otlpTraceId: id.slice(5) };
  if (id.startsWith("session:") && id.length > 8) return { sessionId: id.slice(8) };
  return undefined;
}

/**
 * When a call started and ended, from where its trace is placed: a trace that says its call time
 * (D58) started then; any other was received as its call ended, its latency after the start.
 */
export function callSpanMs(placedMs: number, latencyMs: number, hasCallTime: boolean): { start: number; end: number } {
  return hasCallTime ? { start: placedMs, end: placedMs + latencyMs } : { start: placedMs - latencyMs, end: placedMs };
}

/** callSpanMs in SQL, over the traces table's columns. */
export const callStartSql = "CASE WHEN arrived_at IS NULL THEN received_at - latency_ms ELSE received_at END";
export const callEndSql = "CASE WHEN arrived_at IS NULL THEN received_at ELSE received_at + latency_ms END";

/** Most calls GetRun answers for one run. */
export const maxRunCalls = 2000;
