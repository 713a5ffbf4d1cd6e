import { beforeAll, describe, expect, it } from "vitest";
import { PriceCheck, type StoredTrace, TraceSource } from "../../gen/calltrace/v1/trace_pb.js";
import { runProcess } from "../support/run-process.js";
import { startTestService, type TestService } from "../support/test-service.js";
import { otelEnvironment, storedFor, tableCost, type Usage } from "./interop.js";

// The "done when": the Vercel AI SDK's calls are stored once each, with exact tokens. An
// application using the real `ai` 6 and @ai-sdk/openai, -anthropic and -google packages, with
// `experimental_telemetry` on, traced by the OpenTelemetry Node SDK and exported by its stock OTLP
// exporter (proto over HTTP, or gRPC) to the real service, calls the fake provider: plain and
// streamed calls of every API, and failing ones (one retried, so two provider calls).

interface PlannedCall {
  /** What ai_sdk_app.mjs does (see its header). */
  call: { provider: string; model: string; stream?: boolean; maxRetries?: number; answer: Record<string, unknown> };
  /** The traces it must leave, one per provider call. */
  stored: { provider: string; model: string; priceKey: string; usage: Usage; tokensReasoning?: number; error?: RegExp }[];
}

const answer = (model: string, usage: { input: number; output: number; cached?: number; cacheWrite?: number; reasoning?: number }) => ({
  model,
  usage,
});
const failed = (provider: string, model: string, error: RegExp) => ({
  provider,
  model,
  priceKey: model,
  usage: { tokensIn: 0, tokensOut: 0 },
  error,
});

const plan: PlannedCall[] = [
  {
    call: { provider: "openai.chat", model: "gpt-4o", answer: answer("gpt-4o-2024-08-06", { input: 1234, output: 567, cached: 1000 }) },
    stored: [
      {
        provider: "openai",
        model: "gpt-4o-2024-08-06",
        priceKey: "gpt-4o",
        usage: { tokensIn: 1234, tokensOut: 567, tokensCachedIn: 1000 },
      },
    ],
  },
  {
    call: {
      provider: "openai.chat",
      model: "gpt-4o-mini",
      stream: true,
      answer: answer("gpt-4o-mini-2024-07-18", { input: 2000, output: 300, cached: 1024 }),
    },
    stored: [
      {
        provider: "openai",
        model: "gpt-4o-mini-2024-07-18",
        priceKey: "gpt-4o-mini",
        usage: { tokensIn: 2000, tokensOut: 300, tokensCachedIn: 1024 },
      },
    ],
  },
  {
    call: { provider: "openai.responses", model: "o3", answer: answer("o3", { input: 1500, output: 900, cached: 200, reasoning: 640 }) },
    stored: [
      {
        provider: "openai",
        model: "o3",
        priceKey: "o3",
        usage: { tokensIn: 1500, tokensOut: 900, tokensCachedIn: 200 },
        tokensReasoning: 640,
      },
    ],
  },
  {
    call: {
      provider: "openai.responses",
      model: "gpt-5",
      stream: true,
      answer: answer("gpt-5", { input: 3000, output: 800, reasoning: 512 }),
    },
    stored: [
      {
        provider: "openai",
        model: "gpt-5",
        priceKey: "gpt-5",
        usage: { tokensIn: 3000, tokensOut: 800, tokensCachedIn: 0 },
        tokensReasoning: 512,
      },
    ],
  },
  {
    // Anthropic's input_tokens leaves the cache out; the AI SDK reports the total.
    call: {
      provider: "anthropic",
      model: "claude-haiku-4-5",
      answer: answer("claude-haiku-4-5-20251001", { input: 2234, output: 567, cached: 900, cacheWrite: 100 }),
    },
    stored: [
      {
        provider: "anthropic",
        model: "claude-haiku-4-5-20251001",
        priceKey: "claude-haiku-4-5",
        usage: { tokensIn: 2234, tokensOut: 567, tokensCachedIn: 900, tokensCacheWrite: 100 },
      },
    ],
  },
  {
    call: {
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      stream: true,
      answer: answer("claude-sonnet-4-5-20250929", { input: 4000, output: 420, cached: 800, cacheWrite: 200 }),
    },
    stored: [
      {
        provider: "anthropic",
        model: "claude-sonnet-4-5-20250929",
        priceKey: "claude-sonnet-4-5",
        usage: { tokensIn: 4000, tokensOut: 420, tokensCachedIn: 800, tokensCacheWrite: 200 },
      },
    ],
  },
  {
    // Gemini counts thoughts apart from the candidates; the AI SDK adds them to the output.
    call: {
      provider: "google",
      model: "gemini-2.5-flash",
      answer: answer("gemini-2.5-flash", { input: 1234, output: 644, cached: 1000, reasoning: 77 }),
    },
    stored: [
      {
        provider: "gemini",
        model: "gemini-2.5-flash",
        priceKey: "gemini-2.5-flash",
        usage: { tokensIn: 1234, tokensOut: 644, tokensCachedIn: 1000 },
        tokensReasoning: 77,
      },
    ],
  },
  {
    // The AI SDK reports a Gemini stream's requested model, not its modelVersion.
    call: {
      provider: "google",
      model: "gemini-2.0-flash",
      stream: true,
      answer: answer("gemini-2.0-flash-001", { input: 800, output: 120 }),
    },
    stored: [{ provider: "gemini", model: "gemini-2.0-flash", priceKey: "gemini-2.0-flash", usage: { tokensIn: 800, tokensOut: 120 } }],
  },
  {
    // Retried once by the AI SDK: two provider calls, two traces.
    call: { provider: "openai.chat", model: "gpt-4.1", maxRetries: 1, answer: { fail: 429 } },
    stored: [failed("openai", "gpt-4.1", /Rate limit reached/), failed("openai", "gpt-4.1", /Rate limit reached/)],
  },
  {
    call: { provider: "anthropic", model: "claude-haiku-4-5", stream: true, answer: { fail: 529 } },
    stored: [failed("anthropic", "claude-haiku-4-5", /Overloaded/)],
  },
  {
    call: { provider: "google", model: "gemini-2.5-pro", answer: { fail: 429 } },
    stored: [failed("gemini", "gemini-2.5-pro", /exhausted/)],
  },
];

interface AppRun {
  calls: { outcome: "ok" | "error"; error?: string }[];
  exports: { code: number; spans: number; error?: string }[];
}

let service: TestService;

beforeAll(async () => {
  service = await startTestService();
});

/** What the test compares of a stored trace: everything read off the span, in one line. */
const projection = (t: { provider: string; model: string; status: string; tokensIn: number; tokensOut: number } & Partial<StoredTrace>) =>
  [t.provider, t.model, t.status, t.tokensIn, t.tokensOut, t.tokensCachedIn ?? 0, t.tokensCacheWrite ?? 0, t.tokensReasoning ?? 0].join(
    " ",
  );

describe.each(["proto", "grpc"])("an AI SDK application exporting with the OTLP %s exporter", (exporter) => {
  let run: AppRun;
  let stored: StoredTrace[];

  beforeAll(async () => {
    const { key, accountId } = await service.createKey("pro");
    const result = await runProcess("node", ["test/otlp-interop/ai_sdk_app.mjs", exporter], {
      env: otelEnvironment(service, key),
      input: JSON.stringify(plan.map((p) => p.call)),
      timeoutMs: 60_000,
    });
    expect(result.status, result.output).toBe(0);
    run = JSON.parse(result.stdout.trim().split("\n").at(-1)!) as AppRun;
    stored = await storedFor(service, accountId);
  }, 90_000);

  it("makes its calls as planned, and every Export is accepted", () => {
    expect(run.calls.map((c) => c.outcome)).toEqual(plan.map((p) => ("fail" in p.call.answer ? "error" : "ok")));
    expect(run.exports.length).toBeGreaterThan(0);
    expect(run.exports.filter((e) => e.code !== 0)).toEqual([]);
  });

  it("stores one trace per provider call, not the AI SDK's outer spans, with exact tokens", () => {
    const expected = plan.flatMap((p) =>
      p.stored.map((s) =>
        projection({
          provider: s.provider,
          model: s.model,
          status: s.error ? "error" : "success",
          ...s.usage,
          ...(s.tokensReasoning ? { tokensReasoning: s.tokensReasoning } : {}),
        }),
      ),
    );
    expect(stored.map(projection).sort()).toEqual(expected.sort());
  });

  it("prices each from the price table, keeps the resource's attribution, and says why failed calls failed", () => {
    for (const planned of plan.flatMap((p) => p.stored)) {
      const trace = stored.find((t) => t.model === planned.model && t.status === (planned.error ? "error" : "success"));
      expect(trace, planned.model).toBeDefined();
      expect(trace).toMatchObject({
        source: TraceSource.OTLP,
        priceCheck: PriceCheck.SERVER,
        serviceName: "ai-sdk-app",
        environment: "test",
      });
      expect(trace!.costUsd).toBe(tableCost(planned.provider, planned.priceKey, planned.usage));
      if (planned.error) expect(trace!.error).toMatch(planned.error);
      else expect(trace!.error).toBeUndefined();
    }
  });

  it("streamed calls carry the time to their first chunk; the others none", () => {
    const streamedModels = new Set(
      plan.filter((p) => p.call.stream && !("fail" in p.call.answer)).flatMap((p) => p.stored.map((s) => s.model)),
    );
    expect(streamedModels.size).toBe(4);
    for (const trace of stored.filter((t) => t.status === "success")) {
      if (streamedModels.has(trace.model)) {
        // The fake sends the first chunk at once and the rest 40 ms later.
        expect(trace.ttftMs, trace.model).toBeGreaterThanOrEqual(0);
        expect(trace.ttftMs!).toBeLessThan(trace.latencyMs);
      } else expect(trace.ttftMs, trace.model).toBeUndefined();
    }
  });
});
