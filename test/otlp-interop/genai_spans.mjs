// Sends hand-built GenAI spans, as an instrumented JavaScript application would, through the
// OpenTelemetry JS SDK and its stock OTLP exporter. The exporter is built with no options: the
// endpoint and the key come only from OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_HEADERS.
//
//   node genai_spans.mjs proto|json|grpc < plan.json   (json: OTLP JSON over HTTP)
//
// The plan lists spans: {name, attributes, durationMs, error?: message, parent?: {name,
// attributes?} of a span around it (an application's request span, or a framework's GenAI span
// around the provider SDK's)}. Prints {spans: [{name, traceId, spanId, parentSpanId}]} and the
// exporter's results.
import { readFileSync } from "node:fs";
import { context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";

const kind = process.argv[2];
const exporters = {
  proto: "@opentelemetry/exporter-trace-otlp-proto",
  json: "@opentelemetry/exporter-trace-otlp-http",
  grpc: "@opentelemetry/exporter-trace-otlp-grpc",
};
if (!(kind in exporters)) throw new Error(`unknown exporter ${kind}: proto, json or grpc`);
const { OTLPTraceExporter } = await import(exporters[kind]);

const plan = JSON.parse(readFileSync(0, "utf8"));
const exporter = new OTLPTraceExporter();
const results = [];
const export_ = exporter.export.bind(exporter);
exporter.export = (spans, done) =>
  export_(spans, (result) => {
    results.push({ code: result.code, error: result.error ? String(result.error.message ?? result.error) : undefined });
    done(result);
  });
const provider = new BasicTracerProvider({
  resource: resourceFromAttributes({ "service.name": "interop-js-app" }),
  spanProcessors: [new BatchSpanProcessor(exporter)],
});
const tracer = provider.getTracer("interop-genai-spans");
const sent = [];
const now = Date.now();
for (const [index, step] of plan.entries()) {
  const start = now - 60_000 + index * 1000;
  const end = start + (step.durationMs ?? 500);
  const parent = step.parent
    ? tracer.startSpan(step.parent.name, { kind: SpanKind.INTERNAL, startTime: start - 5, attributes: step.parent.attributes })
    : undefined;
  const parentContext = parent ? trace.setSpan(context.active(), parent) : context.active();
  const span = tracer.startSpan(step.name, { kind: SpanKind.CLIENT, startTime: start, attributes: step.attributes }, parentContext);
  if (step.error) span.setStatus({ code: SpanStatusCode.ERROR, message: step.error });
  span.end(end);
  parent?.end(end + 5);
  const ids = span.spanContext();
  sent.push({ name: step.name, traceId: ids.traceId, spanId: ids.spanId, parentSpanId: parent?.spanContext().spanId });
}
await provider.forceFlush();
await provider.shutdown();
process.stdout.write(`${JSON.stringify({ spans: sent, exports: results })}\n`);
