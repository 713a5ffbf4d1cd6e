"""init, unpatch, shutdown, the exit flush and fork(): tracing starts, stops and ends cleanly."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import openai
import pytest

import calltrace
from clients import openai_client
from conftest import API_KEY
from fakes.collector import ACCEPTED
from shapes import MESSAGES

HERE = Path(__file__).parent


def chat(provider, model="gpt-4o"):
    return openai_client(provider.url).chat.completions.create(model=model, messages=MESSAGES)


def run_exit_app(provider, endpoint, calls):
    """Runs exit_app.py; returns the seconds from its last call to the end of its exit flush, and to its exit."""
    process = subprocess.run(
        [sys.executable, str(HERE / "exit_app.py"), provider.url, endpoint, str(calls)],
        capture_output=True, text=True, timeout=60,
    )
    ended = time.time()
    assert process.returncode == 0, process.stderr
    marks = dict(line.split() for line in process.stdout.splitlines())
    calls_done = float(marks["calls-done"])
    return float(marks["flushed"]) - calls_done, ended - calls_done


def test_init_patches_the_imported_libraries_and_unpatch_restores_them(collector):
    original = openai.resources.chat.completions.Completions.create
    try:
        assert calltrace.init(api_key=API_KEY, endpoint=collector.endpoint) == ["openai", "anthropic", "gemini"]
        assert openai.resources.chat.completions.Completions.create is not original
        assert openai.resources.chat.completions.Completions.create.__wrapped__ is original
        calltrace.init(api_key=API_KEY, endpoint=collector.endpoint)  # twice: still one layer
        assert openai.resources.chat.completions.Completions.create.__wrapped__ is original
    finally:
        calltrace.unpatch()
    assert openai.resources.chat.completions.Completions.create is original


@pytest.mark.parametrize(
    "switch",
    [
        pytest.param({}, id="no-key"),
        pytest.param({"api_key": API_KEY, "enabled": False}, id="enabled-false"),
        pytest.param({"api_key": API_KEY, "env": "1"}, id="CALLTRACE_DISABLED"),
    ],
)
def test_switched_off_nothing_is_traced_and_calls_with_the_calltrace_option_still_work(
    switch, provider, collector, monkeypatch, caplog
):
    monkeypatch.delenv("CALLTRACE_API_KEY", raising=False)
    monkeypatch.setenv("CALLTRACE_ENDPOINT", collector.endpoint)
    if "env" in switch:
        monkeypatch.setenv("CALLTRACE_DISABLED", switch.pop("env"))
    try:
        with caplog.at_level(logging.INFO, logger="calltrace"):
            assert calltrace.init(**switch) == []
        completion = openai_client(provider.url).chat.completions.create(
            model="gpt-4o", messages=MESSAGES, calltrace={"user_id": "u-1"}
        )
        assert completion.usage.prompt_tokens == 1234
        assert calltrace.flush(1)
        assert collector.requests == [] and calltrace.stats()["sent"] == 0
        assert ("no API key" if not switch else "disabled") in caplog.text
    finally:
        calltrace.unpatch()


def test_calltrace_disabled_wins_over_enabled_true(provider, collector, monkeypatch):
    monkeypatch.setenv("CALLTRACE_DISABLED", "true")
    try:
        assert calltrace.init(api_key=API_KEY, endpoint=collector.endpoint, enabled=True) == []
        chat(provider)
        assert calltrace.flush(1) and collector.requests == []
    finally:
        calltrace.unpatch()


def test_the_key_and_endpoint_come_from_the_environment(provider, collector, monkeypatch):
    monkeypatch.setenv("CALLTRACE_API_KEY", "ct_fromenvironment0123456789abcdefghij")
    monkeypatch.setenv("CALLTRACE_ENDPOINT", collector.endpoint)
    calltrace.init()
    try:
        chat(provider)
        collector.wait_for(1)
    finally:
        calltrace.shutdown(2)
    assert collector.requests[0].headers["Authorization"] == "Bearer ct_fromenvironment0123456789abcdefghij"


def test_a_new_init_replaces_key_and_endpoint_while_queued_traces_keep_theirs(provider, collector, _provider_server):
    from fakes.collector import Collector

    other = Collector().start()
    try:
        calltrace.init(api_key="ct_first00000000000000000000000000000000", endpoint=collector.endpoint)
        chat(provider)
        calltrace.init(api_key="ct_second0000000000000000000000000000000", endpoint=other.endpoint)
        chat(provider)
        assert calltrace.flush(3)
    finally:
        calltrace.shutdown(2)
        other.stop()
    assert [t["api_key"] for t in collector.traces()] == ["ct_first00000000000000000000000000000000"]
    assert [t["api_key"] for t in other.traces()] == ["ct_second0000000000000000000000000000000"]


def test_after_shutdown_calls_are_not_traced(provider, collector):
    calltrace.init(api_key=API_KEY, endpoint=collector.endpoint)
    chat(provider)
    assert calltrace.shutdown(2)
    chat(provider)
    time.sleep(0.1)
    assert len(collector.requests) == 1


def test_shutdown_waits_at_most_its_timeout_and_drops_what_is_left(provider, collector):
    calltrace.init(api_key=API_KEY, endpoint=collector.endpoint, concurrency=1)
    collector.default = (202, {"status": "ok"}, {}, 2.0)
    try:
        for _ in range(3):
            chat(provider)
        started = time.monotonic()
        assert calltrace.shutdown(0.3) is False
        assert time.monotonic() - started < 1
        assert calltrace.stats()["dropped"] == 2  # the first is on its way, two were waiting
    finally:
        collector.default = ACCEPTED


def test_at_exit_pending_traces_are_delivered(provider, collector):
    collector.default = (202, {"status": "ok"}, {}, 0.2)  # still pending when the script ends
    try:
        flush_took, _ = run_exit_app(provider, collector.endpoint, calls=3)
    finally:
        collector.default = ACCEPTED
    assert len(collector.requests) == 3
    assert [t["model"] for t in collector.traces()] == ["gpt-4o-2024-08-06"] * 3  # openai, patched on import
    assert flush_took < 10


def test_at_exit_1500_traces_reach_a_service_answering_in_50_ms_within_the_exit_window(provider, collector):
    # One trace per round trip delivered 264 of these: senders now work concurrently.
    collector.default = (202, {"status": "ok"}, {}, 0.05)
    try:
        flush_took, _ = run_exit_app(provider, collector.endpoint, calls=1500)
    finally:
        collector.default = ACCEPTED
    assert len(collector.requests) == 1500
    assert len({r.headers["Idempotency-Key"] for r in collector.requests}) == 1500
    assert flush_took < 10, flush_took


def test_at_exit_a_service_that_never_answers_holds_the_process_at_most_10_seconds(provider, collector):
    collector.default = (202, {"status": "ok"}, {}, 30.0)
    try:
        flush_took, exit_took = run_exit_app(provider, collector.endpoint, calls=2)
    finally:
        collector.default = ACCEPTED
    assert 9.5 <= flush_took <= 10.5, flush_took
    assert exit_took < 15, exit_took  # interpreter teardown on a busy machine comes on top


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_child_sends_its_own_traces_and_not_its_parents(provider, collector):
    calltrace.init(api_key=API_KEY, endpoint=collector.endpoint)
    collector.default = (202, {"status": "ok"}, {}, 0.3)
    try:
        chat(provider)  # its trace is still queued or in flight at fork time
        pid = os.fork()
        if pid == 0:  # the child: trace one call, flush, and leave without running pytest's exit
            code = 1
            try:
                chat(provider, model="gpt-4o-mini")
                code = 0 if calltrace.flush(5) else 3
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert calltrace.flush(5)
    finally:
        collector.default = ACCEPTED
        calltrace.shutdown(2)
    assert sorted(t["model"] for t in collector.traces()) == ["gpt-4o-2024-08-06", "gpt-4o-mini-2024-07-18"]


def test_a_library_imported_after_init_is_patched_then_and_not_after_unpatch():
    script = """
import sys, calltrace
traced = lambda method: method.__code__.co_filename.endswith("_calls.py")
print(calltrace.init(api_key="ct_x", endpoint="http://127.0.0.1:9/v1/traces"))
import openai
from openai.resources.chat.completions import Completions
print(traced(Completions.create), type(openai.__loader__).__name__)
calltrace.unpatch()
from google.genai.models import Models
print(traced(Models.generate_content), traced(Completions.create))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["['openai', 'anthropic', 'gemini']", "True SourceFileLoader", "False False"]


def test_a_trace_in_flight_when_init_is_called_again_counts_for_the_configuration_it_was_made_under(provider, collector):
    collector.script((202, {"status": "ok"}, {}, 0.5))
    try:
        calltrace.init(api_key=API_KEY, endpoint=collector.endpoint)
        chat(provider)
        collector.wait_for(1)  # on its way, answered in 0.5 s
        calltrace.init(api_key=API_KEY, endpoint=collector.endpoint)
        assert calltrace.flush(2)
        assert calltrace.stats()["sent"] == 0
    finally:
        calltrace.shutdown(2)
