"""Anthropic: messages (create, and the stream() helper), sync and async, streamed or not."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from .._calls import Shape
from .._tracer import Usage


def _read_counts(counts: Any, usage: Usage) -> None:
    """Anthropic's input_tokens leave out cache reads and writes; tokens_in counts them all.

    Stream events restate the counts cumulatively, and may leave some out:
    a count not given keeps its earlier value.
    """
    usage.reported = True
    if counts.cache_read_input_tokens is not None:
        usage.tokens_cached_in = counts.cache_read_input_tokens
    if counts.cache_creation_input_tokens is not None:
        usage.tokens_cache_write = counts.cache_creation_input_tokens
    if counts.input_tokens is not None:
        usage.tokens_in = counts.input_tokens + (usage.tokens_cached_in or 0) + (usage.tokens_cache_write or 0)
    if counts.output_tokens is not None:
        usage.tokens_out = counts.output_tokens
    # Cache writes split by lifetime (billed at different rates), and web searches billed per request.
    creation = getattr(counts, "cache_creation", None)
    if creation is not None and creation.ephemeral_1h_input_tokens is not None:
        usage.tokens_cache_write_1h = creation.ephemeral_1h_input_tokens
    tools = getattr(counts, "server_tool_use", None)
    if tools is not None and tools.web_search_requests is not None:
        usage.web_search_requests = tools.web_search_requests
    tier = getattr(counts, "service_tier", None)
    if tier in ("standard", "priority", "batch"):
        usage.service_tier = tier


class Messages(Shape):
    provider = "anthropic"

    def read(self, response: Any, usage: Usage) -> None:
        usage.model = response.model or usage.model
        _read_counts(response.usage, usage)

    def observe(self, item: Any, usage: Usage) -> bool:
        kind = getattr(item, "type", None)
        if kind == "content_block_delta":
            usage.output_seen()
        elif kind == "message_start":
            self.read(item.message, usage)
        elif kind == "message_delta":
            _read_counts(item.usage, usage)
        return False


class MessageStreams(Messages):
    """messages.stream(): a manager whose `with` makes the streamed request and gives a MessageStream."""

    stream_helper = True

    def streaming(self, kwargs: Dict[str, Any]) -> bool:
        return True

    def trace_helper(self, helper: Any, trace: Callable[[Any], Any]) -> None:
        # The MessageStream reads its raw Stream/AsyncStream (the same events
        # create(stream=True) gives) from this attribute only once iterated,
        # and closes it on close() and when the `with` block is left.
        raw = helper._raw_stream
        if not hasattr(raw, "__next__") and not hasattr(raw, "__anext__"):
            raise TypeError(f"not a stream: {type(raw).__name__}")
        helper._raw_stream = trace(raw)


def targets() -> List[Tuple[type, str, Shape]]:
    from anthropic.resources.messages import AsyncMessages, Messages as SyncMessages

    messages, streams = Messages(), MessageStreams()
    return [
        (SyncMessages, "create", messages),
        (AsyncMessages, "create", messages),
        (SyncMessages, "stream", streams),
        (AsyncMessages, "stream", streams),
    ]
