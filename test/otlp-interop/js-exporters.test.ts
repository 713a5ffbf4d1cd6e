import { beforeAll, describe, expect, it } from "vitest";
import { PriceCheck, type StoredTrace, TraceSource } from "../../gen/calltrace/v1/trace_pb.js";
import type { DashboardClient } from "../dashboard/dashboard-client.js";
import { runProcess } from "../support/run-process.js";
import { startTestService, type TestService } from "../support/test-service.js";
import { dashboardTraces, dashboardUser, otelEnvironment, tableCost, type Usage } from "./interop.js";

// The OpenTelemetry JS SDK with its stock OTLP exporters (@opentelemetry/exporter-trace-otlp-proto
// and -http: protobuf and OTLP JSON over HTTP; -grpc over h2c), configured only by
// OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_HEADERS, sends GenAI spans as a JavaScript
// application's instrumentation would.

interface PlannedSpan {
  span: {
    name: string;
    attributes: Record<string, string | number | boolean>;
    durationMs?: number;
    error?: string;
    parent?: { name: string; attributes?: Record<string, string | number | boolean> };
  };
  /** What the service must store for it; undefined: nothing. */
  stored?: { provider: string; model: string; priceKey: string; usage: Usage; tokensReasoning?: number; error?: string };
}

const genai = (provider: string, model: string, usage: Record<string, number>, more: Record<string, string | number | boolean> = {}) => ({
  "gen_ai.operation.name": "chat",
  "gen_ai.provider.name": provider,
  "gen_ai.request.model": model,
  ...Object.fromEntries(Object.entries(usage).map(([name, n]) => [`gen_ai.usage.${name}`, n])),
  ...more,
});

const plan: PlannedSpan[] = [
  {
    span: {
      name: "chat gpt-5",
      attributes: genai("openai", "gpt-5", {
        input_tokens: 12_000,
        output_tokens: 3_000,
        "cache_read.input_tokens": 8_000,
        "reasoning.output_tokens": 2_048,
      }),
      durationMs: 2345,
    },
    stored: {
      provider: "openai",
      model: "gpt-5",
      priceKey: "gpt-5",
      usage: { tokensIn: 12_000, tokensOut: 3_000, tokensCachedIn: 8_000 },
      tokensReasoning: 2_048,
    },
  },
  {
    // Inside a web request's span, which is not an LLM call.
    span: {
      name: "chat claude-sonnet-4-5",
      attributes: genai("anthropic", "claude-sonnet-4-5", {
        input_tokens: 210_000,
        output_tokens: 1_000,
        "cache_read.input_tokens": 150_000,
        "cache_creation.input_tokens": 10_000,
      }),
      parent: { name: "POST /api/summarise", attributes: { "http.request.method": "POST" } },
    },
    stored: {
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      priceKey: "claude-sonnet-4-5",
      usage: { tokensIn: 210_000, tokensOut: 1_000, tokensCachedIn: 150_000, tokensCacheWrite: 10_000 },
    },
  },
  {
    // A framework's GenAI span around the provider SDK's, both with usage: one call, one trace.
    span: {
      name: "chat gemini-2.5-flash",
      attributes: genai("gcp.gemini", "gemini-2.5-flash", { input_tokens: 400, output_tokens: 80 }),
      parent: {
        name: "chat gemini-2.5-flash (framework)",
        attributes: genai("gcp.gemini", "gemini-2.5-flash", { input_tokens: 400, output_tokens: 80 }),
      },
    },
    stored: { provider: "gemini", model: "gemini-2.5-flash", priceKey: "gemini-2.5-flash", usage: { tokensIn: 400, tokensOut: 80 } },
  },
  {
    span: {
      name: "chat gpt-4o-mini",
      attributes: genai("openai", "gpt-4o-mini", {}, { "error.type": "timeout" }),
      error: "Request timed out.",
    },
    stored: {
      provider: "openai",
      model: "gpt-4o-mini",
      priceKey: "gpt-4o-mini",
      usage: { tokensIn: 0, tokensOut: 0 },
      error: "Request timed out.",
    },
  },
  {
    span: { name: "execute_tool get_weather", attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather" } },
  },
];

let service: TestService;

beforeAll(async () => {
  service = await startTestService();
});

describe.each(["proto", "json", "grpc"])("the OpenTelemetry JS SDK with the OTLP %s exporter", (exporter) => {
  let client: DashboardClient;
  let sent: {
    spans: { name: string; traceId: string; spanId: string; parentSpanId?: string }[];
    exports: { code: number; error?: string }[];
  };
  let stored: StoredTrace[];

  beforeAll(async () => {
    const user = await dashboardUser(service, `js-${exporter}@example.com`);
    client = user.client;
    const env = otelEnvironment(service, user.key);
    const result = await runProcess(process.execPath, ["test/otlp-interop/genai_spans.mjs", exporter], {
      env,
      input: JSON.stringify(plan.map((p) => p.span)),
      timeoutMs: 60_000,
    });
    expect(result.status, result.output).toBe(0);
    sent = JSON.parse(result.stdout);
    // The exporter flushed before the app exited, and a 200 means committed: all is stored now.
    stored = await dashboardTraces(client);
  }, 90_000);

  it("the exporter reports every Export a success", () => {
    expect(sent.exports.length).toBeGreaterThan(0);
    expect(sent.exports).toEqual(sent.exports.map(() => ({ code: 0 })));
  });

  it("stores one trace per LLM call and nothing for request, tool or wrapping spans", () => {
    const expected = plan.flatMap((p, index) => (p.stored ? [sent.spans[index]!.traceId] : []));
    expect(stored.map((t) => t.otlpTraceId).sort()).toEqual(expected.sort());
  });

  it("gives each the provider, model, exact tokens, the table's price and the error of a failed call", () => {
    for (const [index, { stored: want }] of plan.entries()) {
      if (!want) continue;
      const trace = stored.find((t) => t.otlpTraceId === sent.spans[index]!.traceId)!;
      const cost = tableCost(want.provider, want.priceKey, want.usage);
      expect(trace, `span ${index}`).toMatchObject({
        provider: want.provider,
        model: want.model,
        tokensIn: want.usage.tokensIn,
        tokensOut: want.usage.tokensOut,
        costUsd: cost,
        serverCostUsd: cost,
        priceCheck: PriceCheck.SERVER,
        source: TraceSource.OTLP,
        status: want.error ? "error" : "success",
        serviceName: "interop-js-app",
      });
      expect(trace.tokensCachedIn ?? 0).toBe(want.usage.tokensCachedIn ?? 0);
      expect(trace.tokensCacheWrite ?? 0).toBe(want.usage.tokensCacheWrite ?? 0);
      expect(trace.tokensReasoning ?? 0).toBe(want.tokensReasoning ?? 0);
      expect(trace.error).toBe(want.error);
    }
    // Claude Sonnet 4.5 above 200k input tokens: the long-context rates, for the whole call.
    const sonnet = stored.find((t) => t.model === "claude-sonnet-4-5")!;
    expect(sonnet.costUsd).toBeGreaterThan((50_000 * 3 + 150_000 * 0.3 + 10_000 * 3.75 + 1_000 * 15) / 1e6);
  });

  it("keeps the span's ids, its parent's id and its duration", () => {
    const first = stored.find((t) => t.otlpSpanId === sent.spans[0]!.spanId)!;
    expect(first.latencyMs).toBe(2345);
    expect(first.otlpParentSpanId).toBe("");
    const nested = stored.find((t) => t.otlpTraceId === sent.spans[1]!.traceId)!;
    expect(nested.otlpSpanId).toBe(sent.spans[1]!.spanId);
    expect(nested.otlpParentSpanId).toBe(sent.spans[1]!.parentSpanId);
  });
});
