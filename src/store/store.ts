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
  /** Indexes a large import may build after its rows (the embedded store only, D77). */
  readonly deferrableIndexes?: DeferrableIndexes;
  /** Resolves when the store can take writes; rejects with the reason otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Secondary indexes of the traces that a large import drops first and builds again after its rows
 * (D77), and the runs roll-up it sums after them (D81).
 */
export interface DeferrableIndexes {
  /** Traces stored, at most (the last sequence number). */
  storedTraces(): number;
  /** Marks the store as importing (this process), drops the indexes and leaves the runs of this store's writes pending; returns the indexes' names. */
  drop(): string[];
  /** Builds every index the store lacks and adds the pending runs, calling onBuilt after each (what it built), then clears the mark. */
  rebuild(onBuilt?: (what: string, ms: number) => void): void;
}
