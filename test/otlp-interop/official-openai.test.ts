import { beforeAll, describe, expect, it } from "vitest";
import { PriceCheck, type StoredTrace, TraceSource } from "../../gen/calltrace/v1/trace_pb.js";
import { runProcess } from "../support/run-process.js";
import { startTestService, type TestService } from "../support/test-service.js";
import { otelEnvironment, otlpPython, storedFor, tableCost } from "./interop.js";

// The instrumentation docs/otlp.md names as OpenTelemetry's official one for OpenAI,
// opentelemetry-instrumentation-openai-v2 (with opentelemetry-util-genai==1.1b0, the pin it imports
// with), in an application with no calltrace code: the real openai client calls the fake
// provider, and the OTLP proto-http exporter, configured by the two variables alone, sends its spans.

const plan = [
  { step: { model: "gpt-4o-mini", tokens: [1234, 567], cached_in: 1000 }, model: "gpt-4o-mini-2024-07-18", priceKey: "gpt-4o-mini" },
  { step: { model: "gpt-4o", stream: true, tokens: [2000, 300] }, model: "gpt-4o-2024-08-06", priceKey: "gpt-4o" },
  { step: { model: "gpt-4.1", fail: 429 }, model: "gpt-4.1", priceKey: "gpt-4.1" },
];

let service: TestService;
let run: { flushed: boolean; calls: { outcome: string }[] };
let stored: StoredTrace[];

beforeAll(async () => {
  service = await startTestService();
  const { key, accountId } = await service.createKey("pro");
  const python = otlpPython(".venv-otlp-official", "test/otlp-interop/official-requirements.txt");
  const result = await runProcess(python, ["test/otlp-interop/official_openai_app.py"], {
    env: otelEnvironment(service, key),
    input: JSON.stringify(plan.map((p) => p.step)),
    timeoutMs: 60_000,
  });
  expect(result.status, result.output).toBe(0);
  run = JSON.parse(result.stdout.trim().split("\n").at(-1)!);
  stored = await storedFor(service, accountId);
}, 90_000);

describe("an app with the official opentelemetry-instrumentation-openai-v2", () => {
  it("made its calls as planned and flushed its spans", () => {
    expect(run.flushed).toBe(true);
    expect(run.calls.map((c) => c.outcome)).toEqual(["ok", "ok", "error"]);
  });

  it("each call is stored once, with its tokens and the price table's cost; the failure as an error", () => {
    expect(stored.map((t) => t.model).sort()).toEqual(plan.map((p) => p.model).sort());
    for (const { step, model, priceKey } of plan) {
      const trace = stored.find((t) => t.model === model)!;
      const [tokensIn, tokensOut] = step.tokens ?? [0, 0];
      // This instrumentation reports no cached input (docs/otlp.md): the call is priced as uncached.
      expect(trace.tokensCachedIn).toBeUndefined();
      const usage = { tokensIn: tokensIn!, tokensOut: tokensOut! };
      expect(trace).toMatchObject({
        provider: "openai",
        ...usage,
        status: step.fail ? "error" : "success",
        source: TraceSource.OTLP,
        priceCheck: PriceCheck.SERVER,
        serviceName: "official-openai-app",
      });
      expect(trace.costUsd).toBe(tableCost("openai", priceKey, usage));
    }
  });
});
