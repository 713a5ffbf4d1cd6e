import type { Price } from "../../sdk/typescript/src/price-table.js";

/** How a custom price's pattern matches a model name (docs/pricing.md, "Custom prices"). */
export type PriceMatchKind = "exact" | "prefix" | "regex";
export const priceMatchKinds: readonly PriceMatchKind[] = ["exact", "prefix", "regex"];

/** A project's own price for the models its pattern matches, in the catalog's shape (sdk/pricing/README.md). */
export interface CustomPriceRecord {
  id: string;
  projectId: string;
  provider: string;
  matchKind: PriceMatchKind;
  pattern: string;
  price: Price;
  /** Applies to calls received at or after it; undefined: since always. */
  effectiveFrom: Date | undefined;
  /** Applies to calls received before it; undefined: until further notice. */
  effectiveUntil: Date | undefined;
  createdAt: Date;
  updatedAt: Date;
}

export type CustomPriceInput = Pick<CustomPriceRecord, "provider" | "matchKind" | "pattern" | "price" | "effectiveFrom" | "effectiveUntil">;

export type RepriceState = "running" | "done" | "failed";

/** A re-price of a project's traces received in [from, until), and how far it got. */
export interface RepriceJobRecord {
  id: string;
  projectId: string;
  from: Date;
  until: Date;
  state: RepriceState;
  /** Traces in the range when the job started. */
  total: number;
  /** Traces looked at so far. */
  done: number;
  /** Traces whose server price or price check changed. */
  changed: number;
  /** Where the next batch starts, opaque to all but the store; "" at the start. */
  cursor: string;
  /** Why it failed; "" otherwise. */
  error: string;
  createdAt: Date;
  updatedAt: Date;
}

/** What re-pricing needs of a stored trace. */
export interface RepriceInput {
  receivedAt: Date;
  provider: string;
  model: string;
  source: number;
  costUsd: number;
  serverCostUsd: number | undefined;
  priceCheck: number;
  tokensIn: number;
  tokensOut: number;
  tokensCachedIn: number | undefined;
  tokensCacheWrite: number | undefined;
  tokensCacheWrite1h: number | undefined;
  tokensAudioIn: number | undefined;
  tokensAudioOut: number | undefined;
  webSearchRequests: number | undefined;
  serviceTier: string | undefined;
}

/** The prices the server keeps for a trace: cost_usd changes only where the server made it (OTLP). */
export interface RepricedTrace {
  costUsd: number;
  serverCostUsd: number | undefined;
  priceCheck: number;
}

/** Implemented by every store adapter; test/store/price-contract.test.ts holds them to it. */
export interface PriceStore {
  /** A project's custom prices, oldest first. */
  listPrices(projectId: string): Promise<CustomPriceRecord[]>;
  createPrice(projectId: string, input: CustomPriceInput): Promise<CustomPriceRecord>;
  /** Undefined when the project has no such price. */
  updatePrice(projectId: string, id: string, input: CustomPriceInput): Promise<CustomPriceRecord | undefined>;
  deletePrice(projectId: string, id: string): Promise<boolean>;

  /** A running job over [from, until), its total counted now. */
  createRepriceJob(projectId: string, range: { from: Date; until: Date }): Promise<RepriceJobRecord>;
  getRepriceJob(projectId: string, id: string): Promise<RepriceJobRecord | undefined>;
  /** Every job still running (of every project): what a restarted service resumes. */
  runningRepriceJobs(): Promise<RepriceJobRecord[]>;
  /**
   * Re-prices the next `limit` traces of the job in receive order and saves its progress; a trace
   * whose prices come out the same is left as it is, so a repeat changes nothing. The roll-ups
   * that sum a changed trace change with it, in the same transaction where the store has them.
   * Resolves with the job as it now stands (state `done` once no trace is left).
   */
  repriceBatch(job: RepriceJobRecord, reprice: (trace: RepriceInput) => RepricedTrace, limit: number): Promise<RepriceJobRecord>;
  failRepriceJob(job: RepriceJobRecord, error: string): Promise<void>;
}
