"""An application instrumented the way OpenTelemetry users do it, with no calltrace code.

    python genai_app.py EXPORTER < plan.json

EXPORTER is `http` (opentelemetry-exporter-otlp-proto-http), `grpc`
(opentelemetry-exporter-otlp-proto-grpc) or `memory` (nothing sent). The OTLP
exporters are built with no arguments: the endpoint and the key come only from
the environment a user would set (OTEL_EXPORTER_OTLP_ENDPOINT,
OTEL_EXPORTER_OTLP_HEADERS). The instrumentations are the stock ones:
OpenLLMetry's openai and anthropic, and OpenTelemetry's google-genai.

The plan (JSON on stdin) lists calls, each {"client": "openai" | "anthropic" |
"gemini", "api": "chat" | "responses" | "messages" | "generate", "model",
"stream", "tokens": [in, out], "cached_in", "reasoning", "anthropic_cache":
[write, read], "fail": HTTP status, "stream_failure": "event" | "disconnect",
"parent": name of an application span around the call}. They go to the fake provider of
sdk/python/tests/fakes, started here. Prints one JSON object: each call's
outcome with the spans it finished (also kept in memory), so a test can find
what the service stored for each call.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sdk" / "python" / "tests"))

import anthropic  # noqa: E402
import openai  # noqa: E402
from fakes.provider import FakeProvider  # noqa: E402
from google import genai  # noqa: E402
from google.genai import types  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor  # noqa: E402
from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor  # noqa: E402
from opentelemetry.instrumentation.openai import OpenAIInstrumentor  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

SERVICE_NAME = "interop-genai-app"


def exporter(kind: str):
    if kind == "http":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    if kind == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    if kind == "memory":
        return None
    raise SystemExit(f"unknown exporter {kind!r}: http, grpc or memory")


def call(fake: FakeProvider, step: Dict[str, Any]) -> None:
    fake.tokens = tuple(step.get("tokens", (1234, 567)))
    fake.cached_in = step.get("cached_in", 0)
    fake.reasoning = step.get("reasoning", 0)
    fake.anthropic_cache = tuple(step.get("anthropic_cache", (0, 0)))
    fake.fail_status = step.get("fail")
    fake.stream_failure = step.get("stream_failure")
    model, stream, messages = step["model"], bool(step.get("stream")), [{"role": "user", "content": "Say hello"}]
    client, api = step["client"], step.get("api")
    if client == "openai":
        openai_client = openai.OpenAI(api_key="sk-test", base_url=fake.url + "/v1", max_retries=0)
        if api == "responses":
            result = openai_client.responses.create(model=model, input="Say hello", stream=stream)
        elif stream:
            result = openai_client.chat.completions.create(model=model, messages=messages, stream=True, stream_options={"include_usage": True})
        else:
            result = openai_client.chat.completions.create(model=model, messages=messages)
    elif client == "anthropic":
        anthropic_client = anthropic.Anthropic(api_key="sk-ant-test", base_url=fake.url, max_retries=0)
        result = anthropic_client.messages.create(model=model, max_tokens=1024, messages=messages, stream=stream)
    elif client == "gemini":
        gemini = genai.Client(api_key="gemini-test", http_options=types.HttpOptions(base_url=fake.url))
        generate = gemini.models.generate_content_stream if stream else gemini.models.generate_content
        result = generate(model=model, contents="Say hello")
    else:
        raise SystemExit(f"unknown client {client!r}")
    if stream:
        for _ in result:  # a stream's span ends when the application has read it to the end
            pass


def span_json(span) -> Dict[str, Any]:
    context, parent = span.get_span_context(), span.parent
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": format(context.trace_id, "032x"),
        "span_id": format(context.span_id, "016x"),
        "parent_span_id": format(parent.span_id, "016x") if parent else None,
        "status": {"code": span.status.status_code.name, "description": span.status.description},
        "start_ns": span.start_time,
        "end_ns": span.end_time,
        "attributes": {key: (list(value) if isinstance(value, tuple) else value) for key, value in (span.attributes or {}).items()},
        "events": [{"name": event.name, "attributes": dict(event.attributes or {})} for event in span.events],
        "scope": span.instrumentation_scope.name if span.instrumentation_scope else None,
        "resource": dict(span.resource.attributes),
    }


def main() -> None:
    kind = sys.argv[1] if len(sys.argv) > 1 else "memory"
    plan: List[Dict[str, Any]] = json.load(sys.stdin)
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    otlp = exporter(kind)
    if otlp is not None:
        provider.add_span_processor(BatchSpanProcessor(otlp))
    trace.set_tracer_provider(provider)
    OpenAIInstrumentor().instrument()
    AnthropicInstrumentor().instrument()
    GoogleGenAiSdkInstrumentor().instrument()

    fake = FakeProvider().start()
    outcomes = []
    app_tracer = trace.get_tracer("interop-genai-app")
    for step in plan:
        before = len(memory.get_finished_spans())
        try:
            if step.get("parent"):  # as a web application's request span around its LLM call
                with app_tracer.start_as_current_span(step["parent"], kind=trace.SpanKind.SERVER):
                    call(fake, step)
            else:
                call(fake, step)
            outcome = {"outcome": "ok"}
        except Exception as error:  # noqa: BLE001 - the provider's failures are part of the plan
            outcome = {"outcome": "error", "error": f"{type(error).__name__}: {error}"}
        # The spans this call finished (SimpleSpanProcessor: in memory as soon as they end).
        outcome["spans"] = [span_json(span) for span in memory.get_finished_spans()[before:]]
        outcomes.append(outcome)
    flushed = provider.force_flush(30_000)
    provider.shutdown()
    fake.stop()
    json.dump({"flushed": flushed, "calls": outcomes}, sys.stdout, default=str)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
