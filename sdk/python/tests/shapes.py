"""Every traced call shape, driven the same way: make a client, make the call, consume it.

A test picks a shape, sync or async, streamed or not, and how the stream is
consumed; `run` does it against the fake provider and returns what the caller
got (or raises what the caller would see).
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Tuple

from clients import anthropic_async, anthropic_client, gemini_client, openai_async, openai_client

MESSAGES = [{"role": "user", "content": "Say hello"}]


class CallShape:
    def __init__(
        self,
        id: str,
        provider: str,
        reported_model: str,
        sync_client: Callable[[str], Any],
        async_client: Callable[[str], Any],
        call: Callable[[Any, bool], Any],
        first_item_tokens: Tuple[int, int],
        context_manager: bool = True,
    ) -> None:
        self.id = id
        self.provider = provider
        self.reported_model = reported_model
        self.sync_client = sync_client
        self.async_client = async_client
        self.call = call
        # Token counts known after the first streamed item (what an early exit reports).
        self.first_item_tokens = first_item_tokens
        # Whether the stream object is a context manager (Gemini's generators are not).
        self.context_manager = context_manager

    def __repr__(self) -> str:
        return self.id


# `options` are further keyword arguments of the call (calltrace= in tests of it).


def _openai_chat(client: Any, stream: bool, **options: Any) -> Any:
    if stream:
        # The fake is not api.openai.com, so usage is asked for here.
        return client.chat.completions.create(
            model="gpt-4o", messages=MESSAGES, stream=True, stream_options={"include_usage": True}, **options
        )
    return client.chat.completions.create(model="gpt-4o", messages=MESSAGES, **options)


def _openai_responses(client: Any, stream: bool, **options: Any) -> Any:
    return client.responses.create(model="gpt-4o", input="Say hello", stream=stream, **options)


def _anthropic(client: Any, stream: bool, **options: Any) -> Any:
    return client.messages.create(model="claude-haiku-4-5", max_tokens=64, messages=MESSAGES, stream=stream, **options)


def _gemini(client: Any, stream: bool, **options: Any) -> Any:
    method = client.models.generate_content_stream if stream else client.models.generate_content
    return method(model="gemini-2.0-flash", contents="Say hello", **options)


SHAPES = [
    CallShape("openai-chat", "openai", "gpt-4o-2024-08-06", openai_client, openai_async, _openai_chat, (0, 0)),
    CallShape("openai-responses", "openai", "gpt-4o-2024-08-06", openai_client, openai_async, _openai_responses, (0, 0)),
    CallShape(
        "anthropic-messages", "anthropic", "claude-haiku-4-5-20251001", anthropic_client, anthropic_async, _anthropic, (1234, 1)
    ),
    CallShape(
        "gemini-generate",
        "gemini",
        "gemini-2.0-flash-001",
        gemini_client,
        lambda url: gemini_client(url).aio,
        _gemini,
        (1234, 0),
        context_manager=False,
    ),
]

# How a test consumes a stream: all of it, or leaving after the first item by
# `break`, close(), or leaving the `with` block.
CONSUME = ("all", "break", "close", "with")


def run(shape: CallShape, url: str, stream: bool, asynchronous: bool, consume: str = "all", **options: Any) -> Any:
    if asynchronous:
        return asyncio.run(run_async(shape, url, stream, consume, **options))
    client = shape.sync_client(url)  # held: a collected genai client closes its connections
    result = shape.call(client, stream, **options)
    if not stream:
        return result
    if consume == "all":
        return [item for item in result]
    if consume == "break":
        for item in result:
            break
        return item
    if consume == "close":
        item = next(result)
        result.close()
        return item
    with result as opened:
        return next(opened)


async def run_async(shape: CallShape, url: str, stream: bool, consume: str = "all", **options: Any) -> Any:
    client = shape.async_client(url)
    result = await shape.call(client, stream, **options)
    if not stream:
        return result
    if consume == "all":
        return [item async for item in result]
    if consume == "break":
        async for item in result:
            break
        # The loop's async-generator finaliser closes the abandoned iterator
        # on a later turn; give it those turns before the loop ends.
        for _ in range(3):
            await asyncio.sleep(0)
        return item
    if consume == "close":
        item = await result.__anext__()
        await (result.aclose() if hasattr(result, "aclose") else result.close())
        return item
    async with result as opened:
        return await opened.__anext__()
