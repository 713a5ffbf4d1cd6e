"""User, session, tags, metadata and environment at three levels: init defaults, a scope, one call."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import calltrace
from clients import openai_client
from conftest import API_KEY
from shapes import MESSAGES, SHAPES, run
from test_call_shapes import MODES, STREAMING, only_trace

DEFAULTS = dict(environment="staging", tags=["app"], metadata={"region": "eu", "team": "core"})


@pytest.fixture
def with_defaults(collector):
    calltrace.init(api_key=API_KEY, endpoint=collector.endpoint, **DEFAULTS)
    yield collector
    calltrace.shutdown(2)


def chat(provider, **options):
    return openai_client(provider.url).chat.completions.create(model="gpt-4o", messages=MESSAGES, **options)


def attributes_of(trace):
    return {name: trace[name] for name in ("user_id", "session_id", "tags", "metadata", "environment") if name in trace}


@pytest.mark.parametrize("shape", SHAPES, ids=repr)
@pytest.mark.parametrize("asynchronous", MODES)
@pytest.mark.parametrize("stream", STREAMING)
def test_each_level_overrides_the_one_before_and_the_provider_never_sees_the_option(
    shape, asynchronous, stream, provider, with_defaults
):
    option = {"user_id": "u-2", "tags": ["rank"], "metadata": {"step": "1"}}
    with calltrace.attributes(user_id="u-1", session_id="s-1", tags=["search", "app"], metadata={"team": "search"}):
        run(shape, provider.url, stream, asynchronous, calltrace=option)

    assert attributes_of(only_trace(with_defaults)) == {
        "user_id": "u-2",
        "session_id": "s-1",
        "tags": ["app", "search", "rank"],
        "metadata": {"region": "eu", "team": "search", "step": "1"},
        "environment": "staging",
    }
    [request] = provider.requests
    assert "calltrace" not in json.dumps(request["body"]) and "u-2" not in json.dumps(request["headers"])


def test_outside_any_scope_a_call_has_the_defaults_and_scopes_nest_and_end(provider, with_defaults):
    chat(provider)
    with calltrace.attributes(user_id="u-1", tags=["outer"]):
        with calltrace.attributes(session_id="s-1", tags=["inner"], metadata={"k": "v"}):
            chat(provider)
        chat(provider)
    chat(provider)

    with_defaults.wait_for(4)
    assert [attributes_of(t) for t in with_defaults.traces()] == [
        {"tags": ["app"], "metadata": {"region": "eu", "team": "core"}, "environment": "staging"},
        {
            "user_id": "u-1",
            "session_id": "s-1",
            "tags": ["app", "outer", "inner"],
            "metadata": {"region": "eu", "team": "core", "k": "v"},
            "environment": "staging",
        },
        {"user_id": "u-1", "tags": ["app", "outer"], "metadata": {"region": "eu", "team": "core"}, "environment": "staging"},
        {"tags": ["app"], "metadata": {"region": "eu", "team": "core"}, "environment": "staging"},
    ]


def test_a_scope_follows_await_and_the_tasks_it_starts_and_concurrent_tasks_keep_their_own(provider, tracing):
    from clients import openai_async

    async def user(name, client):
        with calltrace.attributes(user_id=name):
            await asyncio.sleep(0.01)
            await client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
            # A task started inside the scope, awaited after the scope has ended.
            return asyncio.ensure_future(client.chat.completions.create(model="gpt-4o", messages=MESSAGES))

    async def main():
        client = openai_async(provider.url)
        tasks = await asyncio.gather(*(user(f"u-{n}", client) for n in range(5)))
        await asyncio.gather(*tasks)
        await client.chat.completions.create(model="gpt-4o", messages=MESSAGES)

    asyncio.run(main())
    tracing.wait_for(11)
    users = sorted(t.get("user_id", "-") for t in tracing.traces())
    assert users == ["-"] + sorted([f"u-{n}" for n in range(5)] * 2)


def test_a_thread_started_inside_a_scope_has_it_and_one_started_outside_does_not(provider, tracing):
    def call():
        chat(provider)

    with calltrace.attributes(user_id="in-thread", tags=["t"]):
        inside = threading.Thread(target=call)
        inside.start()
    inside.join()
    outside = threading.Thread(target=call)
    outside.start()
    outside.join()

    tracing.wait_for(2)
    assert [attributes_of(t) for t in tracing.traces()] == [{"user_id": "in-thread", "tags": ["t"]}, {}]


def test_executor_tasks_run_with_the_scope_of_the_code_that_submitted_them(provider, tracing):
    def call(expected):
        chat(provider, calltrace={"metadata": {"expected": expected}})

    with ThreadPoolExecutor(max_workers=1) as pool:
        # The pool's only worker thread is started inside this first scope.
        with calltrace.attributes(user_id="a"):
            pool.submit(call, "a").result()
        with calltrace.attributes(user_id="b"):
            pool.submit(call, "b").result()
        pool.submit(call, "-").result()

        async def in_executor():
            with calltrace.attributes(user_id="c"):
                await asyncio.get_running_loop().run_in_executor(pool, call, "c")

        asyncio.run(in_executor())

    tracing.wait_for(4)
    assert [(t.get("user_id", "-"), t["metadata"]["expected"]) for t in tracing.traces()] == [
        ("a", "a"),
        ("b", "b"),
        ("-", "-"),
        ("c", "c"),
    ]


def test_an_untraced_block_traces_nothing_inside_not_in_its_threads_and_tasks(provider, tracing):
    from clients import openai_async

    async def task_call():
        await openai_async(provider.url).chat.completions.create(model="gpt-4o", messages=MESSAGES)

    with calltrace.untraced():
        chat(provider, calltrace={"user_id": "x"})
        thread = threading.Thread(target=chat, args=(provider,))
        thread.start()
        thread.join()
        asyncio.run(task_call())
    chat(provider)  # the marker: traced

    trace = only_trace(tracing)
    assert len(provider.requests) == 4
    assert "user_id" not in trace


def test_values_past_the_contracts_limits_are_cut_or_dropped_with_one_warning_each(provider, collector, caplog):
    metadata = {"bad key": "x", "": "y", "k" * 65: "z", "bad\n": "n", "none": None, "number": 7}
    metadata.update({f"k{n}": "v" * 600 for n in range(40)})
    with caplog.at_level(logging.WARNING, logger="calltrace"):
        calltrace.init(api_key=API_KEY, endpoint=collector.endpoint, environment="e" * 100, tags="one-tag")
        try:
            for _ in range(2):
                with calltrace.attributes(user_id="u" * 300, session_id=12345, tags=[f"t{n}" for n in range(25)] + ["x" * 70]):
                    chat(provider, calltrace={"metadata": metadata, "unknown": 1})
            collector.wait_for(2)
        finally:
            calltrace.shutdown(2)

    trace = collector.traces()[0]
    assert trace["user_id"] == "u" * 256 and trace["session_id"] == "12345"
    assert trace["environment"] == "e" * 64
    assert trace["tags"] == ["one-tag"] + [f"t{n}" for n in range(19)]
    assert list(trace["metadata"]) == ["number"] + [f"k{n}" for n in range(31)]
    assert trace["metadata"]["number"] == "7"
    assert all(value == "v" * 512 for key, value in trace["metadata"].items() if key != "number")
    second = collector.traces()[1]
    assert second == {**trace, "latency_ms": second["latency_ms"], "called_at": second["called_at"]}
    messages = [r.getMessage() for r in caplog.records]
    # One warning per kind of problem, however often it occurs.
    assert len(messages) == len(set(messages)) == 8, messages


@pytest.mark.parametrize("prefix", ["k", "calltrace.k"])
def test_a_trace_with_full_metadata_still_says_its_usage_is_missing(prefix, provider, tracing):
    metadata = {f"{prefix}{n}": "v" for n in range(32)}
    openai_client(provider.url).chat.completions.with_raw_response.create(
        model="gpt-4o", messages=MESSAGES, calltrace={"metadata": metadata}
    )

    trace = only_trace(tracing)
    assert len(trace["metadata"]) == 32 and trace["metadata"]["calltrace.usage"] == "missing"
    assert f"{prefix}31" not in trace["metadata"]


def test_the_option_works_on_the_helpers_that_are_patched_methods(provider, tracing):
    from clients import anthropic_client

    with anthropic_client(provider.url).messages.stream(
        model="claude-haiku-4-5", max_tokens=64, messages=MESSAGES, calltrace={"user_id": "helper"}
    ) as stream:
        stream.get_final_message()
    openai_client(provider.url).chat.completions.parse(model="gpt-4o", messages=MESSAGES, calltrace={"user_id": "parse"})
    openai_client(provider.url).responses.parse(model="gpt-4o", input="hi", calltrace={"user_id": "responses"})

    tracing.wait_for(3)
    assert [t["user_id"] for t in tracing.traces()] == ["helper", "parse", "responses"]
    assert all("calltrace" not in json.dumps(r["body"]) for r in provider.requests)


@pytest.mark.parametrize("asynchronous", MODES)
def test_openais_stream_helpers_take_the_option_and_keep_the_scope_they_were_made_in(asynchronous, provider, tracing):
    from clients import openai_async

    options = dict(model="gpt-4o", messages=MESSAGES, stream_options={"include_usage": True}, calltrace={"tags": ["helper"]})

    async def run_async():
        client = openai_async(provider.url)
        with calltrace.attributes(user_id="maker"):
            manager = client.chat.completions.stream(**options)
        async with manager as stream:
            return (await stream.get_final_completion()).choices[0].message.content

    if asynchronous:
        content = asyncio.run(run_async())
    else:
        with calltrace.attributes(user_id="maker"):
            manager = openai_client(provider.url).chat.completions.stream(**options)
        with manager as stream:
            content = stream.get_final_completion().choices[0].message.content

    assert content == "Hello there!"
    trace = only_trace(tracing)
    assert (trace["user_id"], trace["tags"], trace["tokens_out"]) == ("maker", ["helper"], 567)
    assert "calltrace" not in json.dumps(provider.requests[0]["body"])
