"""Gemini (google-genai): models.generate_content and generate_content_stream, sync and async."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from .._calls import Shape
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
            # Each streamed chunk restates the running totals. Thinking tokens
            # are billed as output; tool-use prompt tokens as input.
            usage.tokens_in = (counts.prompt_token_count or 0) + (counts.tool_use_prompt_token_count or 0)
            usage.tokens_out = (counts.candidates_token_count or 0) + (counts.thoughts_token_count or 0)
        return False


def targets() -> List[Tuple[type, str, Shape]]:
    from google.genai.models import AsyncModels, Models

    whole, streamed = GenerateContent(streams=False), GenerateContent(streams=True)
    return [
        (Models, "generate_content", whole),
        (Models, "generate_content_stream", streamed),
        (AsyncModels, "generate_content", whole),
        (AsyncModels, "generate_content_stream", streamed),
    ]
