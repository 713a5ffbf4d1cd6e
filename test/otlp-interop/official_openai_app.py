"""An application instrumented with OpenTelemetry's official OpenAI instrumentation
(opentelemetry-instrumentation-openai-v2, which imports only with opentelemetry-util-genai==1.1b0),
with no calltrace code.

    python official_openai_app.py < plan.json

The OTLP proto-http exporter is built with no arguments: the endpoint and the key come only from
OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_HEADERS. The plan lists OpenAI calls, each
{"model", "stream", "tokens": [in, out], "cached_in", "fail": HTTP status}, made with the real
openai client against the fake provider of sdk/python/tests/fakes. Prints each call's outcome.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sdk" / "python" / "tests"))

import openai  # noqa: E402
from fakes.provider import FakeProvider  # noqa: E402
from opentelemetry import trace  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402


def main() -> None:
    plan = json.load(sys.stdin)
    provider = TracerProvider(resource=Resource.create({"service.name": "official-openai-app"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    OpenAIInstrumentor().instrument()
    fake = FakeProvider().start()
    client = openai.OpenAI(api_key="sk-test", base_url=fake.url + "/v1", max_retries=0)
    outcomes = []
    for step in plan:
        fake.tokens = tuple(step["tokens"]) if "tokens" in step else (1234, 567)
        fake.cached_in = step.get("cached_in", 0)
        fake.fail_status = step.get("fail")
        messages = [{"role": "user", "content": "Say hello"}]
        try:
            if step.get("stream"):
                for _ in client.chat.completions.create(
                    model=step["model"], messages=messages, stream=True, stream_options={"include_usage": True}
                ):
                    pass
            else:
                client.chat.completions.create(model=step["model"], messages=messages)
            outcomes.append({"outcome": "ok"})
        except Exception as error:  # noqa: BLE001 - the provider's failures are part of the plan
            outcomes.append({"outcome": "error", "error": f"{type(error).__name__}: {error}"})
    flushed = provider.force_flush(30_000)
    provider.shutdown()
    fake.stop()
    json.dump({"flushed": flushed, "calls": outcomes}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
