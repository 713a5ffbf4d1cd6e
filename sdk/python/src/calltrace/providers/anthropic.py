"""Anthropic: messages (create, and the stream() helper), sync and async, streamed or not."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from .._calls import Shape
from .._tracer import Usage


def _input_tokens(counts: Any, default: int) -> int:
    """Input tokens including cache writes and reads, which the price table prices as input."""
    if counts.input_tokens is None:
        return default
    return counts.input_tokens + (counts.cache_creation_input_tokens or 0) + (counts.cache_read_input_tokens or 0)


class Messages(Shape):
    provider = "anthropic"

    def read(self, response: Any, usage: Usage) -> None:
        usage.model = response.model or usage.model
        usage.tokens_in = _input_tokens(response.usage, 0)
        usage.tokens_out = response.usage.output_tokens or 0

    def observe(self, item: Any, usage: Usage) -> bool:
        kind = getattr(item, "type", None)
        if kind == "message_start":
            self.read(item.message, usage)
        elif kind == "message_delta":
            # Counts here are cumulative; input may be restated or left out.
            usage.tokens_in = _input_tokens(item.usage, usage.tokens_in)
            usage.tokens_out = item.usage.output_tokens or usage.tokens_out
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
