// The history the dashboard bench imports: a team's LLM calls over weeks, as an export of a live
// instance holds them. Most calls belong to runs (an agent's calls sharing a session, or an
// OpenTelemetry trace), a few users make most calls, failures carry the ids and figures providers
// put in them (so the Errors view has groups to form), and the attribution is the one the ingest
// bench sends (attributed-traffic.ts).
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { StoredTraceSchema, TraceSource } from "../../gen/calltrace/v1/trace_pb.js";
import type { TraceWrite } from "../../src/store/trace-store.js";
import { attribution, attributedCardinality, seededRandom } from "./attributed-traffic.js";

export interface TrafficProject {
  id: string;
  keyIds: string[];
}

const models = [
  ["openai", "gpt-4o", 2.5, 10],
  ["openai", "gpt-4o-mini", 0.15, 0.6],
  ["openai", "o3", 2, 8],
  ["anthropic", "claude-sonnet-4", 3, 15],
  ["anthropic", "claude-haiku-3.5", 0.8, 4],
  ["gemini", "gemini-2.5-pro", 1.25, 10],
  ["gemini", "gemini-2.5-flash", 0.3, 2.5],
] as const;
const countries = ["US", "US", "US", "GB", "DE", "FR", "IN", "BR", "JP", "CA", "AU", "IE", "NL", "ES", "SG", ""];
const services = ["support-agent", "research-agent", "code-review"];

const hex = (rand: () => number, digits: number) =>
  Array.from({ length: digits / 8 }, () =>
    Math.floor(rand() * 2 ** 32)
      .toString(16)
      .padStart(8, "0"),
  ).join("");

/** Failures as providers word them, most frequent first; `n` varies what the Errors view masks (ids, figures, quoted values). */
const failures: ((n: number, rand: () => number) => string)[] = [
  (n, rand) =>
    `rate_limit_error: Rate limit reached on tokens per min (TPM): Limit 30000, Used ${29_000 + (n % 1000)}, Requested ${n % 5000}. Please try again in ${(n % 9000) / 1000}s. (request req_${hex(rand, 24)})`,
  (_, rand) =>
    `overloaded_error: Overloaded (request id ${hex(rand, 8)}-${hex(rand, 8).slice(0, 4)}-4${hex(rand, 8).slice(0, 3)}-8${hex(rand, 8).slice(0, 3)}-${hex(rand, 16).slice(0, 12)})`,
  (n) => `invalid_request_error: max_tokens: ${8193 + (n % 50_000)} > 8192, which is the maximum allowed number of output tokens`,
  () => "upstream 502: bad gateway",
  (n) =>
    `context_length_exceeded: This model's maximum context length is 128000 tokens. However, your messages resulted in ${128_001 + (n % 9000)} tokens.`,
  (n) => `timeout: request timed out after ${30_000 + (n % 4) * 10_000} ms (attempt ${1 + (n % 3)} of 3)`,
  (n) => `RESOURCE_EXHAUSTED: Quota exceeded for metric 'generate_content_requests' and limit 'per minute' of project '${100_000_000 + n}'`,
  (n) => `tool call failed: function 'lookup_order' answered HTTP 500 for order "ORD-${100_000 + (n % 900_000)}"`,
];
/** The failure kind of a draw in [0, 1): the first kinds far more often than the last. */
const failureKind = (r: number) => Math.floor(failures.length * r ** 1.6);

/** An agent's run in progress: its calls share its user, key and environment, and a session or an OTLP trace. */
interface Run {
  left: number;
  userId: string;
  keyId: string;
  environment: string;
  sessionId?: string;
  otlp?: { traceId: string; rootSpanId: string; service: string };
}

/** Runs going on at once in one project: their calls interleave, so a run of 6 calls spans minutes. */
const concurrentRuns = 24;
/** Share of calls made outside any run (no session, no OTLP trace). */
const aloneShare = 0.25;
/** Share of runs that are OpenTelemetry traces (the rest are sessions). */
const otlpShare = 0.3;

/** One project's calls, in time order: each call continues a run in progress or starts one. */
function projectCalls(project: TrafficProject, rand: () => number) {
  const runs: (Run | undefined)[] = Array.from({ length: concurrentRuns });
  let sessions = 0;
  let failuresSoFar = 0;
  // Squaring skews usage: the lowest-numbered users make most of the calls, as big customers do.
  const user = () => `user-${Math.floor(attributedCardinality.users * rand() ** 2)}`;
  const key = () => project.keyIds[Math.floor(rand() * project.keyIds.length)]!;
  const newRun = (): Run => {
    const run: Run = { left: 2 + Math.floor(rand() ** 2 * 14), userId: user(), keyId: key(), environment: attribution(rand).environment };
    if (rand() < otlpShare)
      run.otlp = { traceId: hex(rand, 32), rootSpanId: hex(rand, 16), service: services[Math.floor(rand() * services.length)]! };
    else run.sessionId = `session-${(sessions++).toString(36)}`;
    return run;
  };

  return (placedMs: number, importKey: string): TraceWrite => {
    let run: Run | undefined;
    if (rand() >= aloneShare) {
      const slot = Math.floor(rand() * concurrentRuns);
      run = runs[slot] ?? newRun();
      run.left -= 1;
      runs[slot] = run.left > 0 ? run : undefined;
    }
    const a = attribution(rand);
    const [provider, model, inPrice, outPrice] = models[Math.floor(rand() * models.length)]!;
    const tokensIn = Math.floor(50 + rand() * 4000);
    const tokensOut = Math.floor(rand() * 800);
    // o3 fails more than the rest, so a model filter on the Errors view narrows to a different mix.
    const failed = rand() < (model === "o3" ? 0.08 : 0.025);
    const latencyMs = failed ? Math.floor(20 + rand() * 400) : Math.floor(Math.exp(5 + rand() * 3.5));
    const trace = create(StoredTraceSchema, {
      calledAt: timestampFromMs(placedMs),
      receivedAt: timestampFromMs(placedMs + latencyMs + Math.floor(20 + rand() * 200)),
      keyId: run?.keyId ?? key(),
      accountId: project.id,
      country: countries[Math.floor(rand() * countries.length)]!,
      provider,
      model,
      tokensIn,
      tokensOut: failed ? 0 : tokensOut,
      latencyMs,
      costUsd: failed ? 0 : (tokensIn * inPrice + tokensOut * outPrice) / 1e6,
      status: failed ? "error" : "success",
      ...(failed ? { error: failures[failureKind(rand())]!(failuresSoFar++, rand) } : {}),
      source: run?.otlp ? TraceSource.OTLP : TraceSource.API,
      userId: run?.userId ?? user(),
      // OTLP spans carry no tags; their metadata and environment come from span attributes.
      tags: run?.otlp ? [] : a.tags,
      metadata: a.metadata,
      environment: run?.environment ?? a.environment,
      ...(run?.sessionId ? { sessionId: run.sessionId } : {}),
      ...(run?.otlp
        ? { otlpTraceId: run.otlp.traceId, otlpSpanId: hex(rand, 16), otlpParentSpanId: run.otlp.rootSpanId, serviceName: run.otlp.service }
        : {}),
    });
    // As `traces import` makes a write of an exported row: keyed by the row's exported id (exported-row.ts).
    return { trace, idempotencyKey: undefined, importKey };
  };
}

/**
 * `count` calls of `read` and a tenth as many of `others` together, interleaved in time (every
 * eleventh call is another project's) and spread evenly over `days` days ending at `endMs`,
 * oldest first, each with a distinct exported id. Deterministic: the same arguments give the same calls.
 */
export function* dashboardTraffic(
  read: TrafficProject,
  others: TrafficProject[],
  count: number,
  days: number,
  endMs: number,
): Generator<TraceWrite> {
  const rand = seededRandom(42);
  const total = count + Math.floor(count / 10);
  const step = (days * 86_400_000) / total;
  const start = endMs - days * 86_400_000;
  const readCalls = projectCalls(read, rand);
  const otherCalls = others.map((p) => projectCalls(p, rand));
  for (let i = 0; i < total; i++) {
    const calls = i % 11 === 10 ? otherCalls[Math.floor(i / 11) % otherCalls.length]! : readCalls;
    yield calls(Math.floor(start + i * step), exportedId(i));
  }
}

/** An exported trace id as a store hands them out: 16 hex digits that do not follow the order of the calls (two 32-bit bijections of `i`). */
function exportedId(i: number): string {
  const a = Math.imul(i ^ 0x5bd1e995, 0x9e3779b1) >>> 0;
  const b = Math.imul(i ^ 0x27d4eb2f, 0x85ebca6b) >>> 0;
  return `id:${a.toString(16).padStart(8, "0")}${b.toString(16).padStart(8, "0")}`;
}
