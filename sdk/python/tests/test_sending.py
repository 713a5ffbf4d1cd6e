"""Delivery to the calltrace service: headers, retries, backoff, the queue bound, and never bothering the caller."""

from __future__ import annotations

import logging
import socket
import threading
import time

import calltrace
from clients import openai_client
from conftest import API_KEY
from fakes.collector import ACCEPTED, DROP, UNAUTHORIZED, quota_exceeded, rate_limited, unavailable
from shapes import MESSAGES


def chat(provider, tokens=None):
    if tokens is not None:
        provider.tokens = tokens
    return openai_client(provider.url).chat.completions.create(model="gpt-4o", messages=MESSAGES)


def init(endpoint, **options):
    settings = dict(api_key=API_KEY, endpoint=endpoint, retry_base_delay=0.01, retry_max_delay=2.0)
    settings.update(options)
    calltrace.init(**settings)


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1/traces"


def test_each_trace_is_posted_with_the_contracts_headers_and_its_own_idempotency_key(provider, tracing):
    chat(provider)
    chat(provider)

    first, second = tracing.wait_for(2)
    for request in (first, second):
        assert request.path == "/v1/traces"
        assert request.headers["Authorization"] == "Bearer " + API_KEY
        assert request.headers["Content-Type"] == "application/json"
        assert 0 < len(request.headers["Idempotency-Key"]) <= 128
        assert request.body["api_key"] == API_KEY
    assert first.headers["Idempotency-Key"] != second.headers["Idempotency-Key"]


def test_a_rate_limited_trace_waits_retry_after_and_is_retried_with_the_same_idempotency_key(provider, tracing):
    tracing.script(rate_limited(retry_after=1))
    chat(provider)

    refused, accepted = tracing.wait_for(2, timeout=5)
    assert refused.headers["Idempotency-Key"] == accepted.headers["Idempotency-Key"]
    assert refused.body == accepted.body
    assert calltrace.flush(2)
    assert calltrace.stats()["sent"] == 1


def test_retry_after_is_honoured_in_time(provider, collector):
    init(collector.endpoint)
    try:
        collector.script(unavailable(retry_after=1))
        started = time.monotonic()
        chat(provider)
        collector.wait_for(1)
        first_at = time.monotonic()
        collector.wait_for(2, timeout=5)
        waited = time.monotonic() - first_at
    finally:
        calltrace.shutdown(2)
    assert 0.8 <= waited < 3, waited
    assert first_at - started < 1


def test_server_errors_and_dropped_connections_are_retried_with_backoff(provider, tracing):
    tracing.script((500, {"error": "boom"}, {}, 0.0), DROP)
    chat(provider)

    requests = tracing.wait_for(3)
    assert len({r.headers["Idempotency-Key"] for r in requests}) == 1
    assert calltrace.flush(2)
    assert calltrace.stats()["sent"] == 1


def test_rejections_are_not_retried_and_a_bad_key_is_reported_once(provider, tracing, caplog):
    tracing.script(UNAUTHORIZED, UNAUTHORIZED, (400, {"error": "Validation error", "details": "x"}, {}, 0.0))
    with caplog.at_level(logging.WARNING, logger="calltrace"):
        for _ in range(3):
            chat(provider)
        assert calltrace.flush(2)

    assert len(tracing.requests) == 3
    assert calltrace.stats()["failed"] == 3
    assert sum("401" in r.getMessage() for r in caplog.records) == 1


def test_a_trace_is_given_up_after_max_retries(provider, collector):
    init(collector.endpoint, max_retries=2)
    collector.default = unavailable(retry_after=0)
    try:
        chat(provider)
        assert calltrace.flush(3)
        assert len(collector.requests) == 3
        assert calltrace.stats()["failed"] == 1
    finally:
        collector.default = ACCEPTED
        calltrace.shutdown(2)


def test_a_retry_after_beyond_the_longest_wait_gives_the_trace_up_at_once(provider, tracing):
    tracing.script(quota_exceeded(retry_after=86400))
    chat(provider)

    assert calltrace.flush(1)
    assert len(tracing.requests) == 1
    assert calltrace.stats()["failed"] == 1


def test_a_service_that_is_down_never_reaches_the_caller(provider, collector):
    init(closed_port_url(), max_retries=1)
    try:
        completion = chat(provider)
        assert completion.choices[0].message.content == "Hello there!"
        assert calltrace.flush(3)
        assert calltrace.stats()["failed"] == 1
    finally:
        calltrace.shutdown(1)


def test_a_slow_service_does_not_slow_the_caller(provider, collector):
    init(collector.endpoint)
    # The service answers no trace until the calls have returned: a call that waited for its
    # trace's answer would not return (for a minute), and its trace would not be on its way below.
    held = threading.Event()
    collector.default = (202, {"status": "ok"}, {}, held)
    try:
        chat(provider)
        chat(provider)
        assert not calltrace.flush(0.05)  # still on its way
        held.set()
        assert calltrace.flush(5)
    finally:
        held.set()
        collector.default = ACCEPTED
        calltrace.shutdown(2)
    assert len(collector.requests) == 2


def test_when_the_queue_is_full_the_oldest_traces_are_dropped_and_counted(provider, collector):
    init(collector.endpoint, max_queue_size=3, concurrency=1)
    held = threading.Event()
    collector.script((202, {"status": "ok"}, {}, held))  # holds the sender while 7 more calls queue up
    try:
        chat(provider, tokens=(1, 1))
        collector.wait_for(1, timeout=30)  # the first is on its way
        for n in range(2, 9):
            chat(provider, tokens=(n, n))
        held.set()
        assert calltrace.flush(5)
        counts = calltrace.stats()
    finally:
        held.set()
        calltrace.shutdown(2)
    # The first was on its way; of the other seven only the newest three waited.
    assert [t["tokens_in"] for t in collector.traces()] == [1, 6, 7, 8]
    assert counts["dropped"] == 4 and counts["sent"] == 4


def test_tracing_failures_never_reach_the_caller(provider, tracing, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("tracing is broken")

    monkeypatch.setattr(calltrace._tracer.Tracer, "record", broken)
    completion = chat(provider)
    assert completion.usage.prompt_tokens == 1234
