// An application using the Vercel AI SDK (`ai` 6 with @ai-sdk/openai, -anthropic and -google) with
// its OpenTelemetry telemetry turned on, traced by the OpenTelemetry Node SDK and exported by the
// stock OTLP exporter, configured only by OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_HEADERS.
// The providers are the local fake (ai_sdk_fake_provider.mjs).
//
//   node ai_sdk_app.mjs proto|grpc < plan.json
//
// The plan lists calls: {provider: "openai.chat" | "openai.responses" | "anthropic" | "google",
// model, stream?, maxRetries?, answer: {model, usage: {input, output, cached?, cacheWrite?,
// reasoning?}} or {fail: status}}. Prints {calls: [{outcome, error?}], exports: [{code, error?}]}.
import { readFileSync } from "node:fs";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";
import { createOpenAI } from "@ai-sdk/openai";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { generateText, streamText } from "ai";
import { startFakeProvider } from "./ai_sdk_fake_provider.mjs";

const kind = process.argv[2];
const exporters = { proto: "@opentelemetry/exporter-trace-otlp-proto", grpc: "@opentelemetry/exporter-trace-otlp-grpc" };
if (!(kind in exporters)) throw new Error(`unknown exporter ${kind}: proto or grpc`);
const { OTLPTraceExporter } = await import(exporters[kind]);
const exporter = new OTLPTraceExporter();
const exports = [];
const export_ = exporter.export.bind(exporter);
exporter.export = (spans, done) =>
  export_(spans, (result) => {
    exports.push({
      code: result.code,
      spans: spans.length,
      error: result.error ? String(result.error.message ?? result.error) : undefined,
    });
    done(result);
  });
const tracing = new NodeTracerProvider({
  resource: resourceFromAttributes({ "service.name": "ai-sdk-app", "deployment.environment.name": "test" }),
  spanProcessors: [new BatchSpanProcessor(exporter)],
});
tracing.register(); // the AI SDK's spans nest through the async context manager, as in an application

const fake = await startFakeProvider();
const openai = createOpenAI({ baseURL: `${fake.url}/v1`, apiKey: "sk-test" });
const anthropic = createAnthropic({ baseURL: `${fake.url}/v1`, apiKey: "sk-ant-test" });
const google = createGoogleGenerativeAI({ baseURL: `${fake.url}/v1beta`, apiKey: "AIza-test" });
const models = {
  "openai.chat": (id) => openai.chat(id),
  "openai.responses": (id) => openai.responses(id),
  anthropic: (id) => anthropic(id),
  google: (id) => google(id),
};

const plan = JSON.parse(readFileSync(0, "utf8"));
const calls = [];
for (const [index, call] of plan.entries()) {
  const answer = { id: `${index}x${Date.now()}`, ...(call.answer.fail ? { fail: call.answer.fail } : call.answer) };
  const options = {
    model: models[call.provider](call.model),
    prompt: `Say hello. @@${JSON.stringify(answer)}@@`,
    maxRetries: call.maxRetries ?? 0,
    experimental_telemetry: { isEnabled: true, functionId: "greeting" },
  };
  try {
    if (call.stream) {
      let streamError;
      const result = streamText({ ...options, onError: ({ error }) => (streamError = error) });
      await result.consumeStream();
      if (streamError) throw streamError;
      await result.usage;
    } else {
      await generateText(options);
    }
    calls.push({ outcome: "ok" });
  } catch (error) {
    calls.push({ outcome: "error", error: String(error?.message ?? error) });
  }
}
await tracing.forceFlush();
await tracing.shutdown();
fake.server.close();
process.stdout.write(`${JSON.stringify({ calls, exports })}\n`);
