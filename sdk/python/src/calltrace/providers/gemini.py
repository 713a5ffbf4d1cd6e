"""Gemini (google-genai): models.generate_content and generate_content_stream, sync and async.

One trace per request. generate_content can make several: automatic
function calling calls the model again with each tool's result, and
automatic continuation follows continuation tokens. Both go through the
library's _generate_content and _generate_content_stream, which are traced;
the public methods only lend those requests the caller's scope and call option.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

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
        if usage.first_output is None and any(c.content and c.content.parts for c in item.candidates or ()):
            usage.output_seen()
        return False


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
        )
    ]
