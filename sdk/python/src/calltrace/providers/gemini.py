"""Gemini (google-genai): models.generate_content, generate_content_stream and embed_content, sync and async.

One trace per request. generate_content can make several: automatic
function calling calls the model again with each tool's result, and
automatic continuation follows continuation tokens. Both go through the
library's _generate_content and _generate_content_stream, which are traced;
the public methods only lend those requests the caller's scope and call option.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from .._calls import Outer, Shape
from .._tracer import Usage


class GenerateContent(Shape):
    provider = "gemini"

    def __init__(self, streams: bool) -> None:
        self.streams = streams

    def streaming(self, kwargs: Dict[str, Any]) -> bool:
        return self.streams

    def read(self, response: Any, usage: Usage) -> None:
        self.observe(response, usage)

    def observe(self, item: Any, usage: Usage) -> bool:
        usage.model = item.model_version or usage.model
        counts = item.usage_metadata
        if counts is not None:
            # Each streamed chunk restates the running totals. The prompt
            # count includes cached tokens; tool-use prompt tokens are input
            # too. Thinking tokens are billed as output but are not in the
            # candidates count: tokens_out is both, tokens_reasoning the
            # thinking part.
            usage.reported = True
            usage.tokens_in = (counts.prompt_token_count or 0) + (counts.tool_use_prompt_token_count or 0)
            usage.tokens_out = (counts.candidates_token_count or 0) + (counts.thoughts_token_count or 0)
            usage.tokens_cached_in = counts.cached_content_token_count
            usage.tokens_reasoning = counts.thoughts_token_count
            # Audio among the uncached prompt: the prompt's audio less the cached audio.
            audio_in = _audio(counts.prompt_tokens_details)
            if audio_in is not None:
                usage.tokens_audio_in = max(0, audio_in - (_audio(counts.cache_tokens_details) or 0))
            usage.tokens_audio_out = _audio(counts.candidates_tokens_details)
            usage.service_tier = TRAFFIC_TYPES.get(_value(counts.traffic_type))
        searches = grounding_searches(usage.model or "", item.candidates or ())
        if searches is not None:
            # A stream spreads and repeats grounding over its last chunks: count it once.
            usage.web_search_requests = max(usage.web_search_requests or 0, searches)
        if usage.first_output is None and any(c.content and c.content.parts for c in item.candidates or ()):
            usage.output_seen()
        return False


# "gemini-3-pro-preview", "models/gemini-3.1-flash-lite", "publishers/google/models/gemini-2.5-pro".
_GENERATION = re.compile(r"(?:^|/)gemini-(\d+)")


def grounding_searches(model: str, candidates: Any) -> Optional[int]:
    """Billed searches of grounding with Google Search (sdk/pricing/README.md, "Gemini grounding").

    Gemini 3 and later bill each search query, Gemini 2.x each grounded prompt;
    None when no candidate is grounded.
    """
    grounding = [c.grounding_metadata for c in candidates if c.grounding_metadata is not None]
    queries = [len(g.web_search_queries or ()) for g in grounding]
    if not any(q or g.grounding_chunks for q, g in zip(queries, grounding)):
        return None
    generation = _GENERATION.search(model)
    return sum(queries) if generation and int(generation.group(1)) >= 3 else 1


# The billed tier of usage_metadata.traffic_type; provisioned throughput is not billed per token.
TRAFFIC_TYPES = {"ON_DEMAND": "standard", "ON_DEMAND_PRIORITY": "priority", "ON_DEMAND_FLEX": "flex"}


def _value(enum: Any) -> Any:
    return getattr(enum, "value", enum)


def _audio(details: Any) -> Any:
    """AUDIO tokens of a list of ModalityTokenCount; None when it lists none."""
    counts = [d.token_count or 0 for d in details or () if _value(d.modality) == "AUDIO"]
    return sum(counts) if counts else None


class EmbedContent(Shape):
    """The Gemini API reports no token counts for embeddings; Vertex AI gives each embedding's."""

    provider = "gemini"

    def streaming(self, kwargs: Dict[str, Any]) -> bool:
        return False

    def read(self, response: Any, usage: Usage) -> None:
        counts = [getattr(e.statistics, "token_count", None) for e in response.embeddings or ()]
        if counts and all(c is not None for c in counts):
            usage.reported = True
            usage.tokens_in = int(sum(counts))


def targets() -> List[Tuple[type, str, Shape]]:
    from google.genai.models import AsyncModels, Models

    whole, streamed, outer = GenerateContent(streams=False), GenerateContent(streams=True), Outer()
    return [
        (cls, method, shape)
        for cls in (Models, AsyncModels)
        for method, shape in (
            ("generate_content", outer),
            ("generate_content_stream", outer),
            ("_generate_content", whole),
            ("_generate_content_stream", streamed),
            ("embed_content", EmbedContent()),
        )
    ]
