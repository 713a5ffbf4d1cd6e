import type { AlertStore } from "./alert-store.js";
import type { KeyStore } from "./key-store.js";
import type { PriceStore } from "./price-store.js";
import type { ScopeCounters } from "./scope-counters.js";
import type { TraceReader } from "./trace-reader.js";
import type { TraceStore } from "./trace-store.js";
import type { TeamStore } from "./team-store.js";
import type { UserStore } from "./user-store.js";

/** A store adapter: one object serves traces, keys, users, teams and alerts (embedded SQLite or MongoDB). */
export interface Store extends TraceStore, TraceReader {
  readonly keys: KeyStore;
  /** Dashboard users and sessions. */
  readonly users: UserStore;
  /** Organizations, members, projects, invitations and the audit log. */
  readonly teams: TeamStore;
  /** Alert rules, destinations, events and the delivery outbox (docs/alerts.md). */
  readonly alerts: AlertStore;
  /** Projects' custom prices and re-price jobs. */
  readonly prices: PriceStore;
  /** Counters of the scopes alert rules watch, kept as batches commit. */
  readonly scopeCounters: ScopeCounters;
  /** Resolves when the store can take writes; rejects with the reason otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
