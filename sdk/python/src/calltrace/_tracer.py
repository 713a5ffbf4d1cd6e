"""The active configuration, and turning one finished provider call into a queued trace."""

from __future__ import annotations

import time
from typing import Optional

from ._pricing import Pricing
from ._sender import Outgoing, Sender

# Wire limits (decisions D5): counts are int32, model 1-256 characters,
# error at most 4096. A trace outside them would be rejected, i.e. lost.
MAX_COUNT = 2147483647
MAX_MODEL = 256
MAX_ERROR = 4096


class Usage:
    """What a call reported, filled in as its response (or stream) is read."""

    __slots__ = ("model", "tokens_in", "tokens_out", "error")

    def __init__(self, model: Optional[str]) -> None:
        self.model = model
        self.tokens_in = 0
        self.tokens_out = 0
        # A failure the provider reported inside an otherwise normal stream.
        self.error: Optional[str] = None


class Tracer:
    def __init__(self, api_key: str, endpoint: str, pricing: Pricing, sender: Sender) -> None:
        self.api_key = api_key
        self.endpoint = endpoint
        self.pricing = pricing
        self.sender = sender

    def record(self, provider: str, usage: Usage, started: float, error: Optional[str]) -> None:
        """Queues the trace of a call that started at `started` (perf_counter) and ends now."""
        latency_ms = _count(round((time.perf_counter() - started) * 1000))
        model = (usage.model or "unknown")[:MAX_MODEL]
        tokens_in = _count(usage.tokens_in)
        tokens_out = _count(usage.tokens_out)
        trace = {
            "provider": provider,
            "model": model,
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "latency_ms": latency_ms,
            "cost_usd": self.pricing.cost(provider, model, tokens_in, tokens_out),
            "api_key": self.api_key,
            "status": "success" if error is None else "error",
        }
        if error is not None:
            trace["error"] = error[:MAX_ERROR]
        self.sender.submit(Outgoing(self.endpoint, self.api_key, trace))


def _count(value: int) -> int:
    return min(MAX_COUNT, max(0, int(value)))


def describe(exc: BaseException) -> str:
    """The trace's error text for an exception the provider library raised."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
