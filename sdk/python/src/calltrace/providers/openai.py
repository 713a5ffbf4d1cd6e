"""OpenAI: chat completions and responses (create and parse), sync and async, streamed or not."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Tuple

from .._calls import Shape
from .._tracer import Usage

PROVIDER = "openai"

# Only OpenAI's own API is known to accept stream_options.include_usage;
# compatible servers (Azure, vLLM, proxies) may reject unknown options.
OPENAI_HOST = "api.openai.com"


class ChatCompletions(Shape):
    provider = PROVIDER

    def prepare(self, resource: Any, kwargs: Dict[str, Any]) -> bool:
        # Without include_usage a streamed completion reports no tokens at all.
        if not self.streaming(kwargs):
            return False
        options = kwargs.get("stream_options")
        if isinstance(options, Mapping) and "include_usage" in options:
            return False  # the caller decided
        if resource._client.base_url.host != OPENAI_HOST:
            return False
        merged = dict(options) if isinstance(options, Mapping) else {}
        merged["include_usage"] = True
        kwargs["stream_options"] = merged
        return True

    def read(self, response: Any, usage: Usage) -> None:
        self.observe(response, usage)

    def observe(self, item: Any, usage: Usage) -> bool:
        usage.model = item.model or usage.model
        counts = item.usage
        if counts is not None:
            usage.tokens_in = counts.prompt_tokens or 0
            usage.tokens_out = counts.completion_tokens or 0
        # With include_usage the last chunk holds usage and no choices: the
        # one a caller who did not ask for it must not see.
        return counts is not None and not item.choices


class Responses(Shape):
    provider = PROVIDER

    # Stream events that carry the final Response, and whether it failed.
    FINAL_EVENTS = {"response.completed": False, "response.incomplete": False, "response.failed": True}

    def read(self, response: Any, usage: Usage) -> None:
        usage.model = response.model or usage.model
        counts = response.usage
        if counts is not None:
            usage.tokens_in = counts.input_tokens or 0
            usage.tokens_out = counts.output_tokens or 0

    def observe(self, item: Any, usage: Usage) -> bool:
        kind = getattr(item, "type", None)
        if kind == "response.created":
            usage.model = item.response.model or usage.model
        elif kind in self.FINAL_EVENTS:
            self.read(item.response, usage)
            if self.FINAL_EVENTS[kind]:
                error = item.response.error
                usage.error = error.message if error is not None else "response failed"
        elif kind == "error":
            usage.error = item.message
        return False


def targets() -> List[Tuple[type, str, Shape]]:
    from openai.resources.chat.completions import AsyncCompletions, Completions
    from openai.resources.responses import AsyncResponses, Responses as SyncResponses

    # The stream() helpers call create(); the parse() helpers do not.
    chat, responses = ChatCompletions(), Responses()
    return [
        (cls, method, shape)
        for classes, shape in (((Completions, AsyncCompletions), chat), ((SyncResponses, AsyncResponses), responses))
        for cls in classes
        for method in ("create", "parse")
    ]
