import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** The protocol a request spoke: the REST edge, one of the RPC protocols, or plain HTTP (health, dashboard, documents). */
export type RequestProtocol = "rest" | "grpc" | "grpc-web" | "connect" | "http";

/** Which limiter decided, and what. */
export type LimiterName = "per_key" | "failed_auth" | "monthly_quota";

/**
 * The service's Prometheus metrics, in a registry of its own (one per running service, so
 * several services in one process, as in the tests, do not mix their counts).
 */
export interface Metrics {
  readonly registry: Registry;
  /** One request finished: its protocol and status (HTTP status for REST and HTTP, the RPC code name for RPCs). */
  request(protocol: RequestProtocol, status: string, seconds: number): void;
  /** A batch of `size` traces was committed (or failed) by the batching writer. */
  batch(size: number, seconds: number): void;
  /** The store failed an operation (a batch write that threw or answered `failed`). */
  storeError(operation: string): void;
  limiterDecision(limiter: LimiterName, decision: "allowed" | "refused"): void;
  /** Reads a gauge's value at scrape time. */
  gauge(name: string, help: string, read: () => number): void;
  /** The exposition text and its content type. */
  scrape(): Promise<{ contentType: string; body: string }>;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = talliedCounter({
    name: "calltrace_requests_total",
    help: "Requests answered, by protocol and status (HTTP status, or RPC code name)",
    labelNames: ["protocol", "status"],
    registers: [registry],
  });
  const latency = new Histogram({
    name: "calltrace_request_duration_seconds",
    help: "Time from the request's arrival to its response's end, by protocol",
    labelNames: ["protocol"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const batchSize = new Histogram({
    name: "calltrace_writer_batch_size",
    help: "Traces per batch the batching writer handed to the store",
    buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500],
    registers: [registry],
  });
  const batchSeconds = new Histogram({
    name: "calltrace_writer_commit_duration_seconds",
    help: "Time from handing a batch to the store to its answer",
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
    registers: [registry],
  });
  const storeErrors = new Counter({
    name: "calltrace_store_errors_total",
    help: "Store operations that failed, by operation",
    labelNames: ["operation"] as const,
    registers: [registry],
  });
  const limiter = talliedCounter({
    name: "calltrace_limiter_decisions_total",
    help: "Limiter decisions, by limiter and decision",
    labelNames: ["limiter", "decision"],
    registers: [registry],
  });

  return {
    registry,
    request(protocol, status, seconds) {
      requests(protocol, status);
      latency.observe({ protocol }, seconds);
    },
    batch(size, seconds) {
      batchSize.observe(size);
      batchSeconds.observe(seconds);
    },
    storeError(operation) {
      storeErrors.inc({ operation });
    },
    limiterDecision(name, decision) {
      limiter(name, decision);
    },
    gauge(name, help, read) {
      new Gauge({
        name,
        help,
        registers: [registry],
        collect() {
          this.set(read());
        },
      });
    },
    async scrape() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}

/**
 * A two-label counter counted through a tally that prom-client takes in when scraped (its
 * collect hook): a count costs a Map update, where `inc` would hash and validate the labels on
 * every request.
 */
function talliedCounter<A extends string, B extends string>(config: {
  name: string;
  help: string;
  labelNames: readonly [A, B];
  registers: Registry[];
}): (a: string, b: string) => void {
  const [nameA, nameB] = config.labelNames;
  const tally = new Map<string, Map<string, number>>();
  new Counter<A | B>({
    ...config,
    collect() {
      for (const [a, byB] of tally) {
        for (const [b, n] of byB) this.inc({ [nameA]: a, [nameB]: b } as Record<A | B, string>, n);
      }
      tally.clear();
    },
  });
  return (a, b) => {
    let byB = tally.get(a);
    if (!byB) tally.set(a, (byB = new Map()));
    byB.set(b, (byB.get(b) ?? 0) + 1);
  };
}
