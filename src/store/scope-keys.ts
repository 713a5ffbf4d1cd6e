import { type AlertScope, AlertScopeKind } from "../../gen/calltrace/v1/alert_pb.js";
import type { CountedCall } from "./scope-counters.js";

/**
 * The string a scope is counted under: `project`, `key:<id>`, `user:<id>`, `tag:<tag>`,
 * `model:<model>`, `environment:<name>` or `metadata:<key>=<value>` (metadata keys hold no `=`,
 * trace.proto). One format for the rules (scopeKey) and the writers (callScopeKeys).
 */
export function scopeKey(scope: AlertScope | undefined): string {
  switch (scope?.kind ?? AlertScopeKind.PROJECT) {
    case AlertScopeKind.KEY:
      return `key:${scope!.value}`;
    case AlertScopeKind.USER:
      return `user:${scope!.value}`;
    case AlertScopeKind.TAG:
      return `tag:${scope!.value}`;
    case AlertScopeKind.MODEL:
      return `model:${scope!.value}`;
    case AlertScopeKind.ENVIRONMENT:
      return `environment:${scope!.value}`;
    case AlertScopeKind.METADATA:
      return `metadata:${scope!.metadataKey}=${scope!.value}`;
    default:
      return "project";
  }
}

/** Every scope a call counts in (a tag once however often the call repeats it). */
export function callScopeKeys(call: CountedCall): string[] {
  const keys = ["project", `key:${call.keyId}`, `model:${call.model}`];
  if (call.userId) keys.push(`user:${call.userId}`);
  if (call.environment) keys.push(`environment:${call.environment}`);
  for (const tag of new Set(call.tags)) keys.push(`tag:${tag}`);
  for (const [key, value] of call.metadata) keys.push(`metadata:${key}=${value}`);
  return keys;
}
