"""Anthropic's messages.stream() helper is traced like messages.create(stream=True): one trace when the stream ends."""

from __future__ import annotations

import asyncio

import anthropic
import pytest
from anthropic.lib.streaming import AsyncMessageStream, AsyncMessageStreamManager, MessageStream, MessageStreamManager
from anthropic.resources.messages import AsyncMessages, Messages

import calltrace
from clients import anthropic_async, anthropic_client
from conftest import API_KEY
from fakes.provider import TEXT
from shapes import MESSAGES
from test_call_shapes import only_trace, price

MODES = [pytest.param(False, id="sync"), pytest.param(True, id="async")]
MODEL, REPORTED = "claude-haiku-4-5", "claude-haiku-4-5-20251001"


def consume(url, asynchronous, read):
    """Opens messages.stream() with the real client and hands the MessageStream to read(); returns what read returns."""
    if asynchronous:
        return asyncio.run(_consume_async(url, read))
    client = anthropic_client(url)
    manager = client.messages.stream(model=MODEL, max_tokens=64, messages=MESSAGES)
    assert isinstance(manager, MessageStreamManager)
    with manager as stream:
        assert isinstance(stream, MessageStream) and isinstance(stream._raw_stream, anthropic.Stream)
        return read(stream)


async def _consume_async(url, read):
    client = anthropic_async(url)
    manager = client.messages.stream(model=MODEL, max_tokens=64, messages=MESSAGES)
    assert isinstance(manager, AsyncMessageStreamManager)
    async with manager as stream:
        assert isinstance(stream, AsyncMessageStream) and isinstance(stream._raw_stream, anthropic.AsyncStream)
        return await read(stream)


def text_stream(asynchronous):
    if asynchronous:

        async def read(stream):
            return "".join([text async for text in stream.text_stream])

        return read
    return lambda stream: "".join(stream.text_stream)


def final_message(asynchronous):
    if asynchronous:

        async def read(stream):
            return await stream.get_final_message()

        return read
    return lambda stream: stream.get_final_message()


def first_text(asynchronous):
    """Reads one text delta, then leaves the `with` block."""
    if asynchronous:

        async def read(stream):
            async for text in stream.text_stream:
                return text

        return read
    return lambda stream: next(stream.text_stream)


def assert_complete_success(trace, provider):
    assert trace["provider"] == "anthropic"
    assert trace["model"] == REPORTED
    assert (trace["tokens_in"], trace["tokens_out"]) == provider.tokens
    input_price, output_price = price(trace)
    assert trace["cost_usd"] == (1234 * input_price + 567 * output_price) / 1e6 > 0
    assert trace["status"] == "success" and "error" not in trace
    assert trace["api_key"] == API_KEY
    assert isinstance(trace["latency_ms"], int) and 0 <= trace["latency_ms"] < 5000


@pytest.mark.parametrize("asynchronous", MODES)
def test_a_stream_read_through_its_text_stream_is_traced_once_with_usage_and_cost(asynchronous, provider, tracing):
    assert consume(provider.url, asynchronous, text_stream(asynchronous)) == "".join(TEXT)

    assert_complete_success(only_trace(tracing), provider)
    assert provider.requests[0]["body"]["stream"] is True


@pytest.mark.parametrize("asynchronous", MODES)
def test_get_final_message_is_traced_once_with_usage_and_cost(asynchronous, provider, tracing):
    message = consume(provider.url, asynchronous, final_message(asynchronous))

    assert message.content[0].text == "".join(TEXT)
    assert (message.usage.input_tokens, message.usage.output_tokens) == provider.tokens
    assert_complete_success(only_trace(tracing), provider)


@pytest.mark.parametrize("asynchronous", MODES)
def test_cache_writes_and_reads_count_as_input(asynchronous, provider, tracing):
    provider.anthropic_cache = (100, 20)
    consume(provider.url, asynchronous, final_message(asynchronous))

    trace = only_trace(tracing)
    assert (trace["tokens_in"], trace["tokens_out"]) == (1234 + 100 + 20, 567)


@pytest.mark.parametrize("asynchronous", MODES)
def test_leaving_the_with_block_early_is_traced_as_a_success_with_what_was_seen(asynchronous, provider, tracing):
    assert consume(provider.url, asynchronous, first_text(asynchronous)) == TEXT[0]

    trace = only_trace(tracing)
    assert trace["status"] == "success" and "error" not in trace
    # message_start carried the input tokens and one output token so far.
    assert (trace["tokens_in"], trace["tokens_out"]) == (1234, 1)
    assert trace["model"] == REPORTED


def run_untraced_then_traced(tracing, arrange, run):
    """The exception the caller sees without tracing, and with it (arrange() sets the failure up for each run)."""
    calltrace.unpatch()
    arrange()
    with pytest.raises(Exception) as untraced:
        run()
    calltrace.init(api_key=API_KEY, endpoint=tracing.endpoint)
    arrange()
    with pytest.raises(type(untraced.value)) as traced:
        run()
    assert str(traced.value) == str(untraced.value)
    assert type(traced.value.__cause__) is type(untraced.value.__cause__)
    assert type(traced.value.__context__) is type(untraced.value.__context__)
    return traced.value


@pytest.mark.parametrize("asynchronous", MODES)
@pytest.mark.parametrize("failure", ["event", "disconnect"])
def test_a_stream_that_fails_midway_is_traced_as_an_error_and_the_exception_reaches_the_caller(
    asynchronous, failure, provider, tracing
):
    def arrange():
        provider.stream_failure = failure

    raised = run_untraced_then_traced(
        tracing, arrange, lambda: consume(provider.url, asynchronous, text_stream(asynchronous))
    )

    trace = only_trace(tracing)
    assert trace["status"] == "error"
    assert trace["error"].startswith(type(raised).__name__ + ": ")
    if failure == "event":
        assert "Overloaded" in trace["error"]
    # The usage seen before the failure: message_start.
    assert (trace["tokens_in"], trace["tokens_out"]) == (1234, 1)
    assert trace["model"] == REPORTED


@pytest.mark.parametrize("asynchronous", MODES)
def test_the_same_exception_object_reaches_the_caller(asynchronous, provider, tracing):
    seen = []

    def read(stream):
        try:
            return stream.get_final_message()
        except Exception as exc:
            seen.append(exc)
            raise

    async def aread(stream):
        try:
            return await stream.get_final_message()
        except Exception as exc:
            seen.append(exc)
            raise

    provider.stream_failure = "event"
    with pytest.raises(anthropic.APIStatusError) as raised:
        consume(provider.url, asynchronous, aread if asynchronous else read)
    assert seen == [raised.value]
    assert only_trace(tracing)["status"] == "error"


@pytest.mark.parametrize("asynchronous", MODES)
def test_a_request_that_fails_is_traced_as_an_error(asynchronous, provider, tracing):
    def arrange():
        provider.fail_status = 400

    raised = run_untraced_then_traced(
        tracing, arrange, lambda: consume(provider.url, asynchronous, text_stream(asynchronous))
    )

    assert isinstance(raised, anthropic.BadRequestError)
    trace = only_trace(tracing)
    assert trace["status"] == "error"
    assert trace["error"].startswith("BadRequestError: ")
    assert (trace["tokens_in"], trace["tokens_out"], trace["cost_usd"]) == (0, 0, 0)
    assert trace["model"] == MODEL


def test_a_manager_never_entered_makes_no_request_and_no_trace(provider, tracing):
    client = anthropic_client(provider.url)
    client.messages.stream(model=MODEL, max_tokens=64, messages=MESSAGES)
    client.messages.create(model=MODEL, max_tokens=64, messages=MESSAGES)  # a marker trace

    trace = only_trace(tracing)
    assert len(provider.requests) == 1 and "stream" not in provider.requests[0]["body"]
    assert trace["tokens_out"] == 567


def test_unpatch_restores_the_stream_helpers(provider, collector):
    originals = (Messages.stream, AsyncMessages.stream)
    calltrace.init(api_key=API_KEY, endpoint=collector.endpoint)
    try:
        assert (Messages.stream.__wrapped__, AsyncMessages.stream.__wrapped__) == originals
    finally:
        calltrace.unpatch()
    assert (Messages.stream, AsyncMessages.stream) == originals

    consume(provider.url, False, text_stream(False))
    assert calltrace.flush(1)
    assert collector.traces() == []
