"""sample_rate keeps a share of successful calls and every failed one; streams carry their time to first token."""

from __future__ import annotations

import pytest

import calltrace
from clients import openai_client
from conftest import API_KEY
from shapes import MESSAGES, SHAPES, run
from test_call_shapes import MODES, only_trace


def test_sample_rate_keeps_that_share_of_successes_and_every_error(provider, collector):
    client = openai_client(provider.url)
    calltrace.init(api_key=API_KEY, endpoint=collector.endpoint, sample_rate=0.25)
    try:
        for _ in range(400):
            client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
        for _ in range(5):
            provider.fail_status = 500
            with pytest.raises(Exception):
                client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
        assert calltrace.flush(10)
        counts = calltrace.stats()
    finally:
        calltrace.shutdown(2)
    statuses = [t["status"] for t in collector.traces()]
    assert statuses.count("error") == 5
    # Each traced success stands for 1/0.25 calls, and says so; an error stands for itself.
    for trace in collector.traces():
        assert trace.get("metadata") == ({"calltrace.sample_rate": "0.25"} if trace["status"] == "success" else None)
    kept = statuses.count("success")
    assert 60 <= kept <= 140, kept  # 100 expected; this range fails once in more than 10^6 runs
    assert counts["sampled_out"] == 400 - kept and counts["sent"] == kept + 5


def test_sample_rate_zero_sends_only_errors_and_a_rate_outside_0_to_1_is_refused(provider, collector):
    with pytest.raises(ValueError, match="sample_rate"):
        calltrace.init(api_key=API_KEY, endpoint=collector.endpoint, sample_rate=1.5)
    calltrace.init(api_key=API_KEY, endpoint=collector.endpoint, sample_rate=0.0)
    try:
        run(SHAPES[2], provider.url, True, False)
        provider.stream_failure = "event"
        with pytest.raises(Exception):
            run(SHAPES[2], provider.url, True, False)
        assert calltrace.flush(2)
    finally:
        calltrace.shutdown(2)
    assert [t["status"] for t in collector.traces()] == ["error"]


@pytest.mark.parametrize("shape", SHAPES, ids=repr)
@pytest.mark.parametrize("asynchronous", MODES)
def test_every_stream_carries_its_time_to_first_token(shape, asynchronous, provider, tracing):
    provider.event_delay = 0.05
    run(shape, provider.url, True, asynchronous)

    trace = only_trace(tracing)
    # At least one event precedes the first token, and at least one follows it.
    assert 45 <= trace["ttft_ms"] <= trace["latency_ms"] - 45, trace


@pytest.mark.parametrize("shape", SHAPES, ids=repr)
def test_a_call_that_is_not_streamed_has_no_time_to_first_token(shape, provider, tracing):
    run(shape, provider.url, False, False)

    assert "ttft_ms" not in only_trace(tracing)


def test_the_anthropic_stream_helper_carries_its_time_to_first_token(provider, tracing):
    from clients import anthropic_client

    provider.event_delay = 0.05
    with anthropic_client(provider.url).messages.stream(model="claude-haiku-4-5", max_tokens=64, messages=MESSAGES) as stream:
        stream.get_final_message()

    trace = only_trace(tracing)
    assert 45 * 4 <= trace["ttft_ms"] <= trace["latency_ms"] - 45  # the fourth event is the first text
