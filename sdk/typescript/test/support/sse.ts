/** One server-sent event: an optional `event:` name and a `data:` payload. */
export interface SseEvent {
  event?: string;
  data: unknown;
}

/** Encodes an event the way the providers do (JSON data, blank-line separated). */
export function encodeSse({ event, data }: SseEvent, newline = "\n"): string {
  const payload = typeof data === "string" ? data : JSON.stringify(data);
  return `${event ? `event: ${event}${newline}` : ""}data: ${payload}${newline}${newline}`;
}
