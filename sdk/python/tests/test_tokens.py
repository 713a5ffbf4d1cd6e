"""Cached, cache-write and reasoning tokens: read from each provider's usage, sent as parts of tokens_in and tokens_out."""

from __future__ import annotations

import pytest

import calltrace
from shapes import SHAPES, run
from test_call_shapes import MODES, STREAMING, only_trace

# What each provider reports, and what the trace must say. tokens_in counts
# every input token; Anthropic reports cache reads and writes beside
# input_tokens, the others include cached tokens in their prompt count.
EXPECTED = {
    "openai-chat": dict(tokens_in=1234, tokens_out=567, tokens_cached_in=1000, tokens_reasoning=300),
    "openai-responses": dict(tokens_in=1234, tokens_out=567, tokens_cached_in=1000, tokens_reasoning=300),
    "anthropic-messages": dict(tokens_in=1234 + 100 + 1000, tokens_out=567, tokens_cached_in=1000, tokens_cache_write=100),
    # Gemini counts thinking apart from the candidates: tokens_out adds them.
    "gemini-generate": dict(tokens_in=1234, tokens_out=567 + 300, tokens_cached_in=1000, tokens_reasoning=300),
}
PARTS = ("tokens_cached_in", "tokens_cache_write", "tokens_reasoning")


@pytest.mark.parametrize("shape", SHAPES, ids=repr)
@pytest.mark.parametrize("asynchronous", MODES)
@pytest.mark.parametrize("stream", STREAMING)
def test_cached_cache_write_and_reasoning_tokens_are_sent(shape, asynchronous, stream, provider, tracing):
    provider.cached_in, provider.reasoning = 1000, 300  # OpenAI and Gemini (Gemini: thoughts)
    provider.anthropic_cache = (100, 1000)  # Anthropic: cache write, cache read

    run(shape, provider.url, stream, asynchronous)

    trace = only_trace(tracing)
    expected = EXPECTED[shape.id]
    assert {name: trace.get(name) for name in expected} == expected
    # A part the provider does not report is left out, not sent as 0.
    assert [name for name in PARTS if name in trace] == [name for name in PARTS if name in expected]
    # Priced at the cached and cache-write rates of the shared table.
    rates = calltrace._tracer.active.pricing.price(trace["provider"], trace["model"]).base
    cached, written = expected["tokens_cached_in"], expected.get("tokens_cache_write", 0)
    uncached = expected["tokens_in"] - cached - written
    assert rates.cached_input < rates.input
    assert trace["cost_usd"] == (
        uncached * rates.input + cached * rates.cached_input + written * rates.cache_write + expected["tokens_out"] * rates.output
    ) / 1e6
    assert trace["cost_usd"] < (expected["tokens_in"] * rates.input + expected["tokens_out"] * rates.output) / 1e6


@pytest.mark.parametrize("shape", SHAPES, ids=repr)
def test_without_cache_or_reasoning_the_parts_are_zero_where_the_provider_reports_them(shape, provider, tracing):
    run(shape, provider.url, False, False)

    trace = only_trace(tracing)
    assert (trace["tokens_in"], trace["tokens_out"]) == provider.tokens
    reported = {"openai-chat": 2, "openai-responses": 2, "anthropic-messages": 2, "gemini-generate": 0}[shape.id]
    assert [trace[name] for name in PARTS if name in trace] == [0] * reported


def test_a_failed_call_sends_no_token_parts(provider, tracing):
    provider.fail_status = 400
    with pytest.raises(Exception):
        run(SHAPES[2], provider.url, False, False)

    trace = only_trace(tracing)
    assert not [name for name in PARTS if name in trace]
