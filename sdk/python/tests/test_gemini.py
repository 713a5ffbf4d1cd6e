"""Gemini specifics: automatic function calling makes several requests, and each is one trace."""

from __future__ import annotations

import asyncio

import pytest
from google.genai import types

import calltrace
from clients import gemini_client
from test_call_shapes import MODES, STREAMING

calls = []


def get_time() -> str:
    """The current time of day."""
    calls.append("get_time")
    return "noon"


async def generate(client, stream, asynchronous, **options):
    models = client.aio.models if asynchronous else client.models
    method = models.generate_content_stream if stream else models.generate_content
    result = method(model="gemini-2.0-flash", contents="What time is it?", config=types.GenerateContentConfig(tools=[get_time]), **options)
    if asynchronous:
        result = await result
    if not stream:
        return result.text
    if asynchronous:
        return "".join([chunk.text or "" async for chunk in result])
    return "".join(chunk.text or "" for chunk in result)


@pytest.mark.parametrize("asynchronous", MODES)
@pytest.mark.parametrize("stream", STREAMING)
def test_automatic_function_calling_records_one_trace_per_request(asynchronous, stream, provider, tracing):
    calls.clear()
    client = gemini_client(provider.url)
    with calltrace.attributes(user_id="u-1"):
        text = asyncio.run(generate(client, stream, asynchronous, calltrace={"tags": ["afc"]}))

    assert text == "Hello there!" and calls == ["get_time"]
    assert len(provider.requests) == 2
    assert "functionResponse" in provider.requests[1]["body"]["contents"][-1]["parts"][0]
    traces = [r.body for r in tracing.wait_for(2)]
    assert calltrace.flush(2) and len(tracing.traces()) == 2
    for trace in traces:
        assert (trace["provider"], trace["model"], trace["status"]) == ("gemini", "gemini-2.0-flash-001", "success")
        assert (trace["tokens_in"], trace["tokens_out"]) == provider.tokens
        assert (trace["user_id"], trace["tags"]) == ("u-1", ["afc"])
        assert ("ttft_ms" in trace) == stream


def test_a_gemini_stream_made_inside_a_scope_keeps_it_when_read_outside(provider, tracing):
    client = gemini_client(provider.url)
    with calltrace.attributes(user_id="u-1"):
        stream = client.models.generate_content_stream(model="gemini-2.0-flash", contents="hi", calltrace={"tags": ["x"]})
    with calltrace.attributes(user_id="other"):
        list(stream)

    [request] = tracing.wait_for(1)
    assert (request.body["user_id"], request.body["tags"]) == ("u-1", ["x"])


def test_a_google_genai_without_the_private_request_methods_is_left_untraced_with_a_warning(collector, monkeypatch, caplog):
    from google.genai.models import AsyncModels, Models

    from conftest import API_KEY

    original = Models.generate_content
    monkeypatch.delattr(AsyncModels, "_generate_content_stream")
    with caplog.at_level("WARNING", logger="calltrace"):
        try:
            assert "gemini" in calltrace.init(api_key=API_KEY, endpoint=collector.endpoint)
            assert Models.generate_content is original
        finally:
            calltrace.shutdown(1)
    assert "cannot trace this version of google.genai" in caplog.text
