"""OpenAI specifics: asking for stream usage only where it is safe, hiding what we asked for, stream objects."""

from __future__ import annotations

import asyncio
import logging

import httpx2
import openai
import pytest

import calltrace
from clients import openai_async, openai_client
from shapes import MESSAGES, SHAPES, run_async


class ToFake(httpx2.HTTPTransport):
    """Sends requests addressed to api.openai.com to the fake provider instead (real sockets)."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.target = httpx2.URL(url)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        request.url = request.url.copy_with(scheme=self.target.scheme, host=self.target.host, port=self.target.port)
        return super().handle_request(request)


def openais_own_api(url: str) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="sk-test",
        base_url="https://api.openai.com/v1",
        max_retries=0,
        http_client=openai.DefaultHttpxClient(transport=ToFake(url)),
    )


def stream_chat(client, **options):
    return list(client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True, **options))


def test_on_openais_api_a_stream_asks_for_usage_and_the_caller_never_sees_the_usage_chunk(provider, tracing):
    chunks = stream_chat(openais_own_api(provider.url))

    assert provider.requests[-1]["body"]["stream_options"] == {"include_usage": True}
    assert chunks and all(chunk.choices for chunk in chunks)
    tracing.wait_for(1)
    trace = tracing.traces()[0]
    assert (trace["tokens_in"], trace["tokens_out"], trace["status"]) == (1234, 567, "success")


def test_other_stream_options_of_the_caller_are_kept_when_usage_is_added(provider, tracing):
    stream_chat(openais_own_api(provider.url), stream_options={"include_obfuscation": False})

    assert provider.requests[-1]["body"]["stream_options"] == {"include_obfuscation": False, "include_usage": True}


def test_a_callers_own_include_usage_is_respected_and_its_usage_chunk_is_delivered(provider, tracing):
    client = openais_own_api(provider.url)

    chunks = stream_chat(client, stream_options={"include_usage": True})
    assert not chunks[-1].choices and chunks[-1].usage.completion_tokens == 567

    stream_chat(client, stream_options={"include_usage": False})
    assert provider.requests[-1]["body"]["stream_options"] == {"include_usage": False}
    tracing.wait_for(2)
    assert [t["tokens_out"] for t in tracing.traces()] == [567, 0]


def test_azure_openai_is_asked_for_stream_usage_too(provider, tracing):
    client = openai.AzureOpenAI(api_key="az-test", api_version="2024-10-21", azure_endpoint=provider.url, max_retries=0)

    chunks = stream_chat(client)

    assert provider.requests[-1]["path"].startswith("/openai/deployments/gpt-4o/chat/completions")
    assert provider.requests[-1]["body"]["stream_options"] == {"include_usage": True}
    assert chunks and all(chunk.choices for chunk in chunks)
    trace = tracing.wait_for(1)[0].body
    assert (trace["tokens_in"], trace["tokens_out"]) == (1234, 567) and "metadata" not in trace


def test_other_hosts_get_the_request_unchanged_and_their_traces_say_the_usage_is_missing(provider, tracing, caplog):
    with caplog.at_level(logging.WARNING, logger="calltrace"):
        stream_chat(openai_client(provider.url))
        stream_chat(openai_client(provider.url))

    assert "stream_options" not in provider.requests[-1]["body"]
    traces = [r.body for r in tracing.wait_for(2)]
    for trace in traces:
        assert (trace["tokens_in"], trace["tokens_out"], trace["cost_usd"]) == (0, 0, 0)  # the server reported no usage
        assert trace["metadata"] == {"calltrace.usage": "missing"}
    [warning] = [r.getMessage() for r in caplog.records if "include_usage" in r.getMessage()]
    assert "127.0.0.1" in warning


def test_a_stream_with_usage_asked_for_is_not_marked(provider, tracing, caplog):
    with caplog.at_level(logging.WARNING, logger="calltrace"):
        stream_chat(openai_client(provider.url), stream_options={"include_usage": True})

    assert "metadata" not in tracing.wait_for(1)[0].body
    assert not [r for r in caplog.records if "include_usage" in r.getMessage()]


def test_traced_streams_still_are_the_librarys_stream_types(provider, tracing):
    stream = openai_client(provider.url).chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
    assert isinstance(stream, openai.Stream)
    assert stream.response.status_code == 200  # other attributes pass through
    stream.close()

    async def main():
        stream = await openai_async(provider.url).chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True)
        assert isinstance(stream, openai.AsyncStream)
        await stream.close()

    asyncio.run(main())


def test_the_chat_stream_helper_is_traced(provider, tracing):
    client = openai_client(provider.url)
    with client.chat.completions.stream(
        model="gpt-4o", messages=MESSAGES, stream_options={"include_usage": True}
    ) as stream:
        final = stream.get_final_completion()

    assert final.choices[0].message.content == "Hello there!"
    tracing.wait_for(1)
    assert tracing.traces()[0]["tokens_out"] == 567


def test_a_response_that_failed_in_the_stream_is_traced_as_an_error(provider, tracing):
    provider.stream_failure = "response.failed"
    events = list(openai_client(provider.url).responses.create(model="gpt-4o", input="hi", stream=True))

    assert events[-1].type == "response.failed"
    tracing.wait_for(1)
    trace = tracing.traces()[0]
    assert (trace["status"], trace["error"]) == ("error", "The model failed to respond.")


def test_an_async_stream_left_by_break_is_reported_while_the_loop_still_runs(provider, tracing):
    async def main():
        client = openai_async(provider.url)
        async for _ in await client.chat.completions.create(model="gpt-4o", messages=MESSAGES, stream=True):
            break
        for _ in range(3):  # the loop's finaliser closes the abandoned iterator on a later turn
            await asyncio.sleep(0)
        return calltrace.stats()

    counts = asyncio.run(main())
    assert counts["sent"] + counts["queued"] == 1
    tracing.wait_for(1)
    assert tracing.traces()[0]["status"] == "success"


# google-genai's async streams print the same error untraced too (their own
# nested generators), so only the Stainless-made clients' streams are checked.
@pytest.mark.parametrize("shape", [s for s in SHAPES if s.provider != "gemini"], ids=repr)
def test_an_async_stream_left_by_break_is_closed_cleanly(shape, provider, tracing):
    errors = []

    async def main():
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: errors.append(context))
        for _ in range(3):
            await run_async(shape, provider.url, True, "break")
        await asyncio.sleep(0.05)

    asyncio.run(main())
    # Left to the garbage collector, the provider stream's generators were closed
    # concurrently: "aclose(): asynchronous generator is already running".
    assert [str(e.get("exception", e.get("message"))) for e in errors] == []
    tracing.wait_for(3)


def test_raw_response_calls_work_as_before_and_are_traced_without_token_counts(provider, tracing):
    client = openai_client(provider.url)

    raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=MESSAGES)
    assert raw.parse().usage.prompt_tokens == 1234
    with client.chat.completions.with_streaming_response.create(model="gpt-4o", messages=MESSAGES) as response:
        assert response.parse().usage.completion_tokens == 567
    raw_stream = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=MESSAGES, stream=True)
    assert len(list(raw_stream.parse())) == 6  # role, four pieces, finish

    tracing.wait_for(3)
    assert [(t["status"], t["tokens_in"]) for t in tracing.traces()] == [("success", 0)] * 3


def test_the_helpers_are_traced(provider, tracing):
    client = openai_client(provider.url)
    client.chat.completions.parse(model="gpt-4o", messages=MESSAGES)
    with client.responses.stream(model="gpt-4o", input="hi") as stream:
        stream.get_final_response()
    client.responses.parse(model="gpt-4o", input="hi")

    tracing.wait_for(3)
    assert [(t["tokens_in"], t["tokens_out"]) for t in tracing.traces()] == [(1234, 567)] * 3

    async def main():
        await openai_async(provider.url).chat.completions.parse(model="gpt-4o", messages=MESSAGES)

    asyncio.run(main())
    tracing.wait_for(4)
