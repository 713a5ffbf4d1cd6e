import type { SpanCall } from "./llm-call.js";

interface Unpaired {
  startNs: bigint;
  endNs: bigint;
  /** The instrumentation scopes whose span of this call was seen (the first one's was stored). */
  scopes: Set<string>;
  /** When it was seen (ms); forgotten after `keepMs`. */
  seenAt: number;
}

/** Long enough for an exporter's next batches (a BatchSpanProcessor sends every 5 s) and a few retries. */
const keepMs = 5 * 60_000;
/** Bounds memory and the time a look-up takes: the oldest groups, and a group's oldest calls, go first past these. */
const maxGroups = 50_000;
const maxPerGroup = 256;

/**
 * Calls without a response id stored lately, by account, provider, model and outcome, so that the
 * same call reported by a second instrumentation (the anthropic SDK's failed-call span beside
 * OpenLLMetry's) is recognised in a later Export too: a span of another scope whose time overlaps
 * one of them is its twin. In this process only, for a few minutes; the check and the record are
 * one synchronous step, so concurrent Exports cannot both store a pair.
 */
export class UnpairedSpans {
  private readonly groups = new Map<string, Unpaired[]>();

  /** True when `call` is the twin of a call seen before (and records the pairing); else records it and answers false. */
  pairOrRecord(accountId: string, call: SpanCall, now = Date.now()): boolean {
    const { provider, model, status } = call.submission.trace;
    const group = `${accountId}\n${provider}\n${model}\n${status}`;
    const seen = (this.groups.get(group) ?? []).filter((u) => now - u.seenAt < keepMs);
    // The same span again (a retried Export) is neither a twin nor a new call to remember.
    const again = seen.some((u) => u.scopes.has(call.scope) && u.startNs === call.startNs && u.endNs === call.endNs);
    const twin = again ? undefined : seen.find((u) => !u.scopes.has(call.scope) && u.startNs <= call.endNs && call.startNs <= u.endNs);
    if (twin) twin.scopes.add(call.scope);
    else if (!again) seen.push({ startNs: call.startNs, endNs: call.endNs, scopes: new Set([call.scope]), seenAt: now });
    if (seen.length > maxPerGroup) seen.splice(0, seen.length - maxPerGroup);
    this.groups.delete(group); // re-inserted last: the map's order is least recently used first
    this.groups.set(group, seen);
    if (this.groups.size > maxGroups) this.groups.delete(this.groups.keys().next().value!);
    return twin !== undefined;
  }
}
