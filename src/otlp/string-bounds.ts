/**
 * The longest strings an OTLP span may put into calltrace (docs/otlp.md's mapping table), so that
 * what is stored, and remembered in memory, grows with the number of calls and never with what a
 * client pads into an Export. Fields the contract bounds (model, user, session, environment) are
 * validated by the pipeline and reject the span; the ones below are cut instead, as a long service
 * name or error text is no reason to lose a call.
 */
export const bounds = {
  /** The resource's `service.name`, stored as `service_name` and metadata `service`. */
  serviceName: 256,
  /** Metadata values (the contract's limit). */
  metadataValue: 512,
  /** Error text (the contract's limit). */
  error: 4096,
  /** The instrumentation scope's name: compared to pair twin spans, never stored. */
  scope: 256,
  /** The model, checked before the span is remembered anywhere (the contract's limit). */
  model: 256,
} as const;

/** The first `max` UTF-16 units of `text`, never ending in half a surrogate pair (the contract refuses lone surrogates). */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = text.slice(0, max);
  return /[\uD800-\uDBFF]$/.test(head) ? head.slice(0, -1) : head;
}
