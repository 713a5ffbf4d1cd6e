"""OpenAI: chat completions and responses (create and parse), sync and async, streamed or not; embeddings."""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Mapping, Tuple

from .._calls import Outer, Shape
from .._tracer import Usage

logger = logging.getLogger("calltrace")

PROVIDER = "openai"

# Hosts known to accept stream_options.include_usage: OpenAI's own API and
# Azure OpenAI (also when reached through an AzureOpenAI client). Other
# compatible servers (vLLM, proxies) may reject an option they do not know.
USAGE_HOSTS = ("api.openai.com",)
USAGE_HOST_SUFFIXES = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")
AZURE_CLIENTS = ("AzureOpenAI", "AsyncAzureOpenAI")

_warned_hosts = set()


def _asks_for_usage(client: Any) -> bool:
    host = client.base_url.host
    return host in USAGE_HOSTS or host.endswith(USAGE_HOST_SUFFIXES) or type(client).__name__ in AZURE_CLIENTS


def _warn_usage_missing(host: str) -> None:
    if host not in _warned_hosts and len(_warned_hosts) < 64:
        _warned_hosts.add(host)
        logger.warning(
            "calltrace: streamed chat completions from %s report no token usage unless you pass "
            "stream_options={'include_usage': True}; calltrace asks only OpenAI and Azure OpenAI for it. "
            "Until then their traces have 0 tokens and the metadata entry calltrace.usage=missing (warned once)",
            host,
        )


class ChatCompletions(Shape):
    provider = PROVIDER

    def prepare(self, resource: Any, kwargs: Dict[str, Any]) -> bool:
        # Without include_usage a streamed completion reports no tokens at all.
        if not self.streaming(kwargs):
            return False
        options = kwargs.get("stream_options")
        if isinstance(options, Mapping) and "include_usage" in options:
            return False  # the caller decided
        if not _asks_for_usage(resource._client):
            _warn_usage_missing(resource._client.base_url.host)
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
            usage.reported = True
            usage.tokens_in = counts.prompt_tokens or 0
            usage.tokens_out = counts.completion_tokens or 0
            # Both parts of the counts above (prompt_tokens includes cached ones).
            usage.tokens_cached_in = _detail(counts.prompt_tokens_details, "cached_tokens")
            usage.tokens_reasoning = _detail(counts.completion_tokens_details, "reasoning_tokens")
            usage.tokens_audio_in = _detail(counts.prompt_tokens_details, "audio_tokens")
            usage.tokens_audio_out = _detail(counts.completion_tokens_details, "audio_tokens")
        usage.service_tier = service_tier(getattr(item, "service_tier", None)) or usage.service_tier
        if usage.first_output is None and any(_has_output(choice) for choice in item.choices):
            usage.output_seen()
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
            usage.reported = True
            usage.tokens_in = counts.input_tokens or 0
            usage.tokens_out = counts.output_tokens or 0
            usage.tokens_cached_in = _detail(counts.input_tokens_details, "cached_tokens")
            usage.tokens_reasoning = _detail(counts.output_tokens_details, "reasoning_tokens")
        usage.service_tier = service_tier(getattr(response, "service_tier", None)) or usage.service_tier
        searches = sum(1 for item in response.output or () if getattr(item, "type", None) == "web_search_call")
        if searches:
            usage.web_search_requests = searches

    def observe(self, item: Any, usage: Usage) -> bool:
        kind = getattr(item, "type", None)
        if isinstance(kind, str) and kind.endswith(".delta"):
            usage.output_seen()  # text, refusal, tool arguments or reasoning
        elif kind == "response.created":
            usage.model = item.response.model or usage.model
        elif kind in self.FINAL_EVENTS:
            self.read(item.response, usage)
            if self.FINAL_EVENTS[kind]:
                error = item.response.error
                usage.error = error.message if error is not None else "response failed"
        elif kind == "error":
            usage.error = item.message
        return False


class Embeddings(Shape):
    provider = PROVIDER

    def read(self, response: Any, usage: Usage) -> None:
        usage.model = response.model or usage.model
        if response.usage is not None:
            usage.reported = True
            usage.tokens_in = response.usage.prompt_tokens or 0


def service_tier(value: Any) -> Any:
    """The billed tier of a response's service_tier; "scale" (prepaid) and unknown values say nothing."""
    if value == "default":
        return "standard"
    return value if value in ("flex", "priority") else None


def _detail(details: Any, name: str) -> Any:
    return getattr(details, name, None) if details is not None else None


def _has_output(choice: Any) -> bool:
    # A chunk's delta (a whole completion's choices have a message instead).
    delta = getattr(choice, "delta", None)
    return delta is not None and bool(
        delta.content or delta.refusal or delta.tool_calls or delta.function_call or getattr(delta, "reasoning_content", None)
    )


def targets() -> List[Tuple[type, str, Shape]]:
    from openai.resources.chat.completions import AsyncCompletions, Completions
    from openai.resources.embeddings import AsyncEmbeddings, Embeddings as SyncEmbeddings
    from openai.resources.responses import AsyncResponses, Responses as SyncResponses

    # The parse() helpers are traced themselves; the stream() helpers make
    # their request through create() when entered, and only lend it the
    # caller's scope and calltrace= option.
    chat, responses, outer = ChatCompletions(), Responses(), Outer()
    return [
        (cls, method, shape)
        for classes, shape in (((Completions, AsyncCompletions), chat), ((SyncResponses, AsyncResponses), responses))
        for cls in classes
        for method in ("create", "parse")
    ] + [
        (cls, "stream", outer) for cls in (Completions, AsyncCompletions, SyncResponses, AsyncResponses)
    ] + [(cls, "create", Embeddings()) for cls in (SyncEmbeddings, AsyncEmbeddings)]
