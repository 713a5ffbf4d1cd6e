import { beforeAll, describe, expect, it } from "vitest";
import { PriceCheck, type StoredTrace, TraceSource } from "../../gen/calltrace/v1/trace_pb.js";
import { runProcess } from "../support/run-process.js";
import { startTestService, type TestService } from "../support/test-service.js";
import { throwawayCertificate } from "../support/tls-certificate.js";
import { dashboardTraces, dashboardUser, otelEnvironment, otlpPython, spanMs, storedFor, tableCost, type Usage } from "./interop.js";

// The issue's "done when": an application instrumented with stock OpenTelemetry GenAI
// instrumentation (OpenLLMetry's openai and anthropic, OpenTelemetry's google-genai) and no
// calltrace code, configured only by OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_HEADERS,
// calls the fake provider through the real openai, anthropic and google-genai clients; its OTLP
// exporter (proto over HTTP, or gRPC) sends to the real service; the dashboard shows one trace per
// call with the provider's model, exact tokens and the price table's cost.

interface PlannedCall {
  /** What genai_app.py does (see its docstring). */
  step: Record<string, unknown>;
  provider: string;
  /** The model the provider reported (its dated snapshot when it gives one). */
  model: string;
  /** The price table's key for that model. */
  priceKey: string;
  usage: Usage;
  tokensReasoning?: number;
  /** For a failed call: what its error text says. */
  error?: RegExp;
}

const ok = (tokensIn: number, tokensOut: number) => ({ tokens: [tokensIn, tokensOut] });

const plan: PlannedCall[] = [
  {
    step: { client: "openai", model: "gpt-4o-mini", ...ok(1234, 567), cached_in: 1000 },
    provider: "openai",
    model: "gpt-4o-mini-2024-07-18",
    priceKey: "gpt-4o-mini",
    usage: { tokensIn: 1234, tokensOut: 567, tokensCachedIn: 1000 },
  },
  {
    step: { client: "openai", model: "gpt-4o", stream: true, ...ok(2000, 300), cached_in: 1024 },
    provider: "openai",
    model: "gpt-4o-2024-08-06",
    priceKey: "gpt-4o",
    usage: { tokensIn: 2000, tokensOut: 300, tokensCachedIn: 1024 },
  },
  {
    step: { client: "openai", api: "responses", model: "o3", ...ok(1500, 900), cached_in: 200, reasoning: 640 },
    provider: "openai",
    model: "o3",
    priceKey: "o3",
    usage: { tokensIn: 1500, tokensOut: 900, tokensCachedIn: 200 },
    tokensReasoning: 640,
  },
  {
    step: { client: "openai", model: "gpt-4.1", fail: 429 },
    provider: "openai",
    model: "gpt-4.1",
    priceKey: "gpt-4.1",
    usage: { tokensIn: 0, tokensOut: 0 },
    error: /429|rate/i,
  },
  {
    // Anthropic's input_tokens leaves the cache out; every instrumentation here reports the total.
    step: { client: "anthropic", model: "claude-haiku-4-5", ...ok(1234, 567), anthropic_cache: [100, 900] },
    provider: "anthropic",
    model: "claude-haiku-4-5-20251001",
    priceKey: "claude-haiku-4-5",
    usage: { tokensIn: 2234, tokensOut: 567, tokensCachedIn: 900, tokensCacheWrite: 100 },
  },
  {
    step: { client: "anthropic", model: "claude-sonnet-4-5", stream: true, ...ok(3000, 420), anthropic_cache: [200, 800] },
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    priceKey: "claude-sonnet-4-5",
    usage: { tokensIn: 4000, tokensOut: 420, tokensCachedIn: 800, tokensCacheWrite: 200 },
  },
  {
    // Inside the application's own request span: that span is not an LLM call and is not stored.
    step: { client: "anthropic", model: "claude-haiku-4-5", ...ok(50, 10), parent: "POST /checkout" },
    provider: "anthropic",
    model: "claude-haiku-4-5-20251001",
    priceKey: "claude-haiku-4-5",
    usage: { tokensIn: 50, tokensOut: 10, tokensCachedIn: 0, tokensCacheWrite: 0 },
  },
  {
    step: { client: "anthropic", model: "claude-haiku-4-5", fail: 500 },
    provider: "anthropic",
    model: "claude-haiku-4-5",
    priceKey: "claude-haiku-4-5",
    usage: { tokensIn: 0, tokensOut: 0 },
    error: /500|api_error|overloaded/i,
  },
  {
    // Gemini counts thoughts apart from the candidates; the instrumentation adds them to the output.
    step: { client: "gemini", model: "gemini-2.5-flash", ...ok(1234, 567), cached_in: 1000, reasoning: 77 },
    provider: "gemini",
    model: "gemini-2.5-flash",
    priceKey: "gemini-2.5-flash",
    usage: { tokensIn: 1234, tokensOut: 644, tokensCachedIn: 1000 },
    tokensReasoning: 77,
  },
  {
    step: { client: "gemini", model: "gemini-2.0-flash", stream: true, ...ok(800, 120) },
    provider: "gemini",
    model: "gemini-2.0-flash-001",
    priceKey: "gemini-2.0-flash",
    usage: { tokensIn: 800, tokensOut: 120 },
  },
  {
    // Above 200k input tokens Gemini 2.5 Pro costs more for the whole call.
    step: { client: "gemini", model: "gemini-2.5-pro", ...ok(250_000, 2_000) },
    provider: "gemini",
    model: "gemini-2.5-pro",
    priceKey: "gemini-2.5-pro",
    usage: { tokensIn: 250_000, tokensOut: 2_000 },
  },
  {
    step: { client: "gemini", model: "gemini-2.5-pro", fail: 429 },
    provider: "gemini",
    model: "gemini-2.5-pro",
    priceKey: "gemini-2.5-pro",
    usage: { tokensIn: 0, tokensOut: 0 },
    error: /429|RESOURCE_EXHAUSTED/,
  },
];

interface AppSpan {
  name: string;
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  start_ns: number;
  end_ns: number;
  attributes: Record<string, unknown>;
}

interface AppRun {
  flushed: boolean;
  calls: { outcome: "ok" | "error"; error?: string; spans: AppSpan[] }[];
}

let service: TestService;
let tlsService: TestService;
let tlsCertFile: string;

beforeAll(async () => {
  service = await startTestService();
  const { certFile, keyFile } = throwawayCertificate();
  tlsCertFile = certFile;
  tlsService = await startTestService({ tlsCertFile: certFile, tlsKeyFile: keyFile });
});

// Anthropic's calls each give two spans (the SDK's own and OpenLLMetry's). One span per Export
// (a setting a user may choose) puts them in different Exports: still one trace per call. With
// gzip, the other setting users turn on.
const splitPlan = plan.filter((call, index) => call.provider === "anthropic" || index === 0 || call.step.model === "gemini-2.5-flash");
// Over TLS, one call of each provider.
const tlsPlan = plan.filter((call, index) => plan.findIndex((other) => other.provider === call.provider) === index);

describe.each([
  // The two exporters a Python user picks between; each gets nothing but the endpoint and the key.
  { name: "the OTLP proto-http exporter", exporter: "http", user: "http", calls: plan, settings: {}, tls: false },
  { name: "the OTLP grpc exporter", exporter: "grpc", user: "grpc", calls: plan, settings: {}, tls: false },
  {
    name: "the OTLP grpc exporter with gzip, sending one span per Export",
    exporter: "grpc",
    user: "split",
    calls: splitPlan,
    settings: { OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "1", OTEL_EXPORTER_OTLP_COMPRESSION: "gzip" },
    tls: false,
  },
  // An https:// endpoint and the certificate to trust (OTEL_EXPORTER_OTLP_CERTIFICATE): HTTP/2 through ALPN.
  { name: "the OTLP grpc exporter over TLS", exporter: "grpc", user: "tls", calls: tlsPlan, settings: {}, tls: true },
])("a Python app with stock GenAI instrumentation and $name", ({ exporter, user: userName, calls, settings, tls }) => {
  const plan = calls;
  let run: AppRun;
  let stored: StoredTrace[];

  beforeAll(async () => {
    // The dashboard's fetch would not trust the throwaway certificate: over TLS, traces are read from the store.
    let key: string;
    let readTraces: () => Promise<StoredTrace[]>;
    if (tls) {
      const created = await tlsService.createKey();
      key = created.key;
      readTraces = () => storedFor(tlsService, created.accountId);
    } else {
      const user = await dashboardUser(service, `python-${userName}@example.com`);
      key = user.key;
      readTraces = () => dashboardTraces(user.client);
    }
    const env = otelEnvironment(tls ? tlsService : service, key, {
      ...settings,
      ...(tls ? { OTEL_EXPORTER_OTLP_CERTIFICATE: tlsCertFile } : {}),
    });
    const result = await runProcess(otlpPython(), ["test/otlp-interop/genai_app.py", exporter], {
      env,
      input: JSON.stringify(plan.map((call) => call.step)),
      timeoutMs: 90_000,
    });
    expect(result.status, result.output).toBe(0);
    run = JSON.parse(result.stdout) as AppRun;
    // The exporter logs a failed export on stderr (and the SDK's flush reports it).
    expect(result.stderr, "the OTLP exporter reported a failed export").not.toMatch(/Failed to export|Transient error|StatusCode\./);
    expect(run.flushed).toBe(true);
    // The exporter flushed before the app exited, and a 200 means committed: all is stored now.
    stored = await readTraces();
  }, 120_000);

  it("each call the app made succeeded or failed as planned", () => {
    expect(run.calls.map((c) => c.outcome)).toEqual(plan.map((call) => (call.error ? "error" : "ok")));
  });

  it("stores exactly one trace per LLM call: not the application's own span, not a second span of the same call", () => {
    // The anthropic SDK traces its own calls, beside OpenLLMetry: two spans, never parent and child.
    for (const [index, call] of plan.entries()) {
      if (call.provider !== "anthropic") continue;
      const names = run.calls[index]!.spans.map((s) => s.name).filter((name) => name.startsWith("anthropic."));
      expect(names.sort(), `call ${index}`).toEqual(["anthropic.chat", "anthropic.messages.create"]);
    }
    const perCall = plan.map((_, index) => tracesOf(index).length);
    expect(perCall, describeSpans()).toEqual(plan.map(() => 1));
    expect(stored).toHaveLength(plan.length);
  });

  it("gives each trace the provider, the provider's model and the exact tokens, cached and reasoning included", () => {
    for (const [index, call] of plan.entries()) {
      const trace = only(index);
      const where = `call ${index} (${JSON.stringify(call.step)})`;
      expect({ provider: trace.provider, model: trace.model, tokensIn: trace.tokensIn, tokensOut: trace.tokensOut }, where).toEqual({
        provider: call.provider,
        model: call.model,
        tokensIn: call.usage.tokensIn,
        tokensOut: call.usage.tokensOut,
      });
      expect(trace.tokensCachedIn ?? 0, where).toBe(call.usage.tokensCachedIn ?? 0);
      expect(trace.tokensCacheWrite ?? 0, where).toBe(call.usage.tokensCacheWrite ?? 0);
      expect(trace.tokensReasoning ?? 0, where).toBe(call.tokensReasoning ?? 0);
    }
  });

  it("prices every call on the server, at the dated table's price (cached, cache-write and long-context rates)", () => {
    for (const [index, call] of plan.entries()) {
      const trace = only(index);
      const expected = tableCost(call.provider, call.priceKey, call.usage);
      const where = `call ${index}: ${call.model}`;
      expect(trace.serverCostUsd, where).toBe(expected);
      expect(trace.costUsd, where).toBe(expected);
      expect(trace.priceCheck, where).toBe(PriceCheck.SERVER);
    }
    // The long-context call is priced at the higher tier, not the base rate.
    const longContext = plan.findIndex((call) => call.usage.tokensIn > 200_000);
    if (longContext >= 0) expect(only(longContext).costUsd).toBeGreaterThan((250_000 * 1.25 + 2_000 * 10) / 1e6);
  });

  it("marks failed calls as errors with the provider's message, and the rest as successes", () => {
    for (const [index, call] of plan.entries()) {
      const trace = only(index);
      if (call.error) {
        expect(trace.status, `call ${index}`).toBe("error");
        expect(trace.error ?? "", `call ${index}`).toMatch(call.error);
        expect((trace.error ?? "").length).toBeLessThanOrEqual(4096);
      } else {
        expect(trace.status, `call ${index}: ${trace.error}`).toBe("success");
        expect(trace.error).toBeUndefined();
      }
    }
  });

  it("measures latency from the span, keeps the OTLP ids and the service name, and says it came over OTLP", () => {
    for (const [index] of plan.entries()) {
      const trace = only(index);
      const span = run.calls[index]!.spans.find((s) => s.span_id === trace.otlpSpanId)!;
      expect(trace.otlpTraceId).toBe(span.trace_id);
      expect(trace.otlpParentSpanId).toBe(span.parent_span_id ?? "");
      expect(Math.abs(trace.latencyMs - spanMs(span.start_ns, span.end_ns)), `call ${index}`).toBeLessThanOrEqual(1);
      expect(trace.serviceName).toBe("interop-genai-app");
      expect(trace.source).toBe(TraceSource.OTLP);
    }
  });

  /** The stored traces whose span is one of the spans call `index` finished. */
  function tracesOf(index: number): StoredTrace[] {
    const ids = new Set(run.calls[index]!.spans.map((s) => s.span_id));
    return stored.filter((trace) => ids.has(trace.otlpSpanId));
  }

  function only(index: number): StoredTrace {
    const traces = tracesOf(index);
    expect(traces, describeSpans()).toHaveLength(1);
    return traces[0]!;
  }

  function describeSpans(): string {
    return run.calls
      .map(
        (call, index) =>
          `call ${index}: ${call.spans.map((s) => `${s.name} ${s.span_id}${stored.some((t) => t.otlpSpanId === s.span_id) ? " (stored)" : ""}`).join(", ")}`,
      )
      .join("\n");
  }
});
