"""Every call shape, sync and async, streamed or not, sends exactly one trace that tells what happened."""

from __future__ import annotations

import pytest

import calltrace
from conftest import API_KEY
from shapes import SHAPES, run

MODES = [pytest.param(False, id="sync"), pytest.param(True, id="async")]
STREAMING = [pytest.param(False, id="whole"), pytest.param(True, id="stream")]


def only_trace(collector):
    """The one trace the call produced (and no second one)."""
    collector.wait_for(1)
    assert calltrace.flush(2)
    bodies = collector.traces()
    assert len(bodies) == 1, bodies
    return bodies[0]


def price(trace):
    """(input, output) base rates of the trace's model: the fake provider reports no cached tokens."""
    base = calltrace._tracer.active.pricing.price(trace["provider"], trace["model"]).base
    return base.input, base.output


@pytest.mark.parametrize("shape", SHAPES, ids=repr)
@pytest.mark.parametrize("asynchronous", MODES)
@pytest.mark.parametrize("stream", STREAMING)
def test_a_successful_call_is_traced_with_its_usage_and_cost(shape, asynchronous, stream, provider, tracing):
    run(shape, provider.url, stream, asynchronous)

    trace = only_trace(tracing)
    assert trace["provider"] == shape.provider
    assert trace["model"] == shape.reported_model
    assert (trace["tokens_in"], trace["tokens_out"]) == provider.tokens
    input_price, output_price = price(trace)
    assert trace["cost_usd"] == (1234 * input_price + 567 * output_price) / 1e6
    assert trace["cost_usd"] > 0
    assert trace["status"] == "success" and "error" not in trace
    assert trace["api_key"] == API_KEY
    assert isinstance(trace["latency_ms"], int) and 0 <= trace["latency_ms"] < 5000


@pytest.mark.parametrize("shape", SHAPES, ids=repr)
@pytest.mark.parametrize("asynchronous", MODES)
def test_a_failed_call_is_traced_as_an_error_and_the_caller_gets_the_providers_own_exception(
    shape, asynchronous, provider, tracing
):
    calltrace.unpatch()
    provider.fail_status = 400
    with pytest.raises(Exception) as untraced:
        run(shape, provider.url, False, asynchronous)
    calltrace.init(api_key=API_KEY, endpoint=tracing.endpoint)

    provider.fail_status = 400
    with pytest.raises(type(untraced.value)) as traced:
        run(shape, provider.url, False, asynchronous)

    assert str(traced.value) == str(untraced.value)
    assert type(traced.value.__cause__) is type(untraced.value.__cause__)
    assert type(traced.value.__context__) is type(untraced.value.__context__)
    trace = only_trace(tracing)
    assert trace["status"] == "error"
    assert trace["error"].startswith(type(traced.value).__name__ + ": ")
    assert (trace["tokens_in"], trace["tokens_out"], trace["cost_usd"]) == (0, 0, 0)
    assert trace["model"] in ("gpt-4o", "claude-haiku-4-5", "gemini-2.0-flash")


# Gemini streams are generators, not context managers: no "with" for them.
LEAVING = [
    pytest.param(shape, consume, id=f"{consume}-{shape.id}")
    for consume in ("break", "close", "with")
    for shape in SHAPES
    if consume != "with" or shape.context_manager
]


@pytest.mark.parametrize("shape, consume", LEAVING)
@pytest.mark.parametrize("asynchronous", MODES)
def test_a_stream_left_early_is_traced_as_a_success_with_what_was_seen(shape, asynchronous, consume, provider, tracing):
    first = run(shape, provider.url, True, asynchronous, consume)

    assert first is not None
    trace = only_trace(tracing)
    assert trace["status"] == "success" and "error" not in trace
    assert (trace["tokens_in"], trace["tokens_out"]) == shape.first_item_tokens


@pytest.mark.parametrize("shape", SHAPES, ids=repr)
@pytest.mark.parametrize("asynchronous", MODES)
@pytest.mark.parametrize("failure", ["event", "disconnect"])
def test_a_stream_that_fails_midway_is_traced_as_an_error(shape, asynchronous, failure, provider, tracing):
    provider.stream_failure = failure
    try:
        run(shape, provider.url, True, asynchronous)
    except Exception as exc:
        raised = exc
    else:
        raised = None

    trace = only_trace(tracing)
    assert trace["status"] == "error"
    if raised is not None:
        assert trace["error"].startswith(type(raised).__name__)
    else:
        # OpenAI's Responses API reports an in-band `error` event without raising.
        assert (shape.id, failure) == ("openai-responses", "event")
        assert "server had an error" in trace["error"]
