import { Counter, collectDefaultMetrics, Gauge, Histogram, type Metric, type MetricValueWithName, Registry } from "prom-client";

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
  /** `traces` of the monthly quota were not given back to the shared counter (it still counts them). */
  quotaGiveBackLost(traces: number): void;
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
  const latency = talliedHistogram({
    name: "calltrace_request_duration_seconds",
    help: "Time from the request's arrival to its response's end, by protocol",
    labelName: "protocol",
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
  const quotaGiveBacksLost = new Counter({
    name: "calltrace_quota_give_backs_lost_total",
    help: "Traces the monthly quota could not give back to the shared counter (Redis down or slow): it counts them though they were not stored",
    registers: [registry],
  });

  return {
    registry,
    request(protocol, status, seconds) {
      requests(protocol, status);
      latency(protocol, seconds);
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
    quotaGiveBackLost(traces) {
      quotaGiveBacksLost.inc(traces);
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

/**
 * A one-label histogram counted through a tally, for the same reason: an observation costs a
 * bucket search and three additions, where prom-client's `observe` validates and hashes its labels
 * on every request. The registry reads it through `get()` as it reads prom-client's histograms,
 * and gets the same values: cumulative buckets with `le` first, `+Inf`, `_sum` and `_count`,
 * label values in the order first observed (tested against a prom-client Histogram).
 */
export function talliedHistogram(config: {
  name: string;
  help: string;
  labelName: string;
  buckets: readonly number[];
  registers: Registry[];
}): (label: string, value: number) => void {
  const { name, help, labelName, buckets } = config;
  const tallies = new Map<string, { perBucket: number[]; sum: number; count: number }>();
  // Buckets carry prom-client's (empty) exemplar too, so that getMetricsAsJSON reads alike.
  const values = (): (MetricValueWithName<string> & { exemplar?: null })[] => {
    const out: (MetricValueWithName<string> & { exemplar?: null })[] = [];
    for (const [label, { perBucket, sum, count }] of tallies) {
      let cumulative = 0;
      buckets.forEach((le, i) => {
        cumulative += perBucket[i]!;
        out.push({ labels: { le, [labelName]: label }, value: cumulative, metricName: `${name}_bucket`, exemplar: null });
      });
      out.push({ labels: { le: "+Inf", [labelName]: label }, value: count, metricName: `${name}_bucket`, exemplar: null });
      out.push({ labels: { [labelName]: label }, value: sum, metricName: `${name}_sum` });
      out.push({ labels: { [labelName]: label }, value: count, metricName: `${name}_count` });
    }
    return out;
  };
  const metric = {
    name,
    help,
    reset: () => tallies.clear(),
    // prom-client's typings declare `type` an enum; the registry reads (and its histograms give) the string.
    get: async () => ({ name, help, type: "histogram", aggregator: "sum", values: values() }),
  };
  for (const registry of config.registers) registry.registerMetric(metric as unknown as Metric);
  return (label, value) => {
    let tally = tallies.get(label);
    if (!tally) tallies.set(label, (tally = { perBucket: buckets.map(() => 0), sum: 0, count: 0 }));
    let i = 0;
    while (i < buckets.length && value > buckets[i]!) i++;
    // Past the last bound: only in +Inf, which is the count.
    if (i < buckets.length) tally.perBucket[i]! += 1;
    tally.sum += value;
    tally.count += 1;
  };
}
