"""The active configuration, and turning one finished provider call into a queued trace."""

from __future__ import annotations

import random
import time
from datetime import datetime, timezone
from typing import Any, Dict, Optional

from ._attributes import MAX_METADATA, Attributes
from ._budget import BudgetGuard
from ._pricing import Pricing
from ._pricing import Usage as PricedUsage
from ._sender import Outgoing, Sender

# Wire limits (the contract, proto/calltrace/v1/trace.proto): counts are
# int32, model 1-256 characters, error at most 4096. A trace outside them
# would be rejected, i.e. lost.
MAX_COUNT = 2147483647
MAX_MODEL = 256
MAX_ERROR = 4096

# The metadata entry of a trace whose call reported no usage (its tokens are
# 0 because they are unknown, not because there were none).
USAGE_MISSING = ("calltrace.usage", "missing")
# The metadata entry of a success traced under sample_rate < 1: it stands for
# 1/rate calls. (Failed calls are all traced: each stands for itself.)
SAMPLE_RATE = "calltrace.sample_rate"


class Usage:
    """What a call reported, filled in as its response (or stream) is read."""

    __slots__ = (
        "model",
        "tokens_in",
        "tokens_out",
        "tokens_cached_in",
        "tokens_cache_write",
        "tokens_reasoning",
        "tokens_cache_write_1h",
        "tokens_audio_in",
        "tokens_audio_out",
        "web_search_requests",
        "service_tier",
        "reported",
        "first_output",
        "error",
    )

    def __init__(self, model: Optional[str]) -> None:
        self.model = model
        self.tokens_in = 0
        self.tokens_out = 0
        # Parts of tokens_in / tokens_out; None when the provider does not say.
        self.tokens_cached_in: Optional[int] = None
        self.tokens_cache_write: Optional[int] = None
        self.tokens_reasoning: Optional[int] = None
        # Billing modes (sdk/pricing/README.md); None when the provider does not say.
        self.tokens_cache_write_1h: Optional[int] = None
        self.tokens_audio_in: Optional[int] = None
        self.tokens_audio_out: Optional[int] = None
        self.web_search_requests: Optional[int] = None
        self.service_tier: Optional[str] = None
        self.reported = False  # the provider's usage was seen
        # perf_counter() of the first streamed item carrying generated output.
        self.first_output: Optional[float] = None
        # A failure the provider reported inside an otherwise normal stream.
        self.error: Optional[str] = None

    def output_seen(self) -> None:
        if self.first_output is None:
            self.first_output = time.perf_counter()


class Tracer:
    def __init__(
        self,
        api_key: str,
        endpoint: str,
        pricing: Pricing,
        sender: Sender,
        defaults: Attributes,
        environment: Optional[str],
        sample_rate: float,
        budget: Optional[BudgetGuard] = None,
    ) -> None:
        self.api_key = api_key
        self.endpoint = endpoint
        self.pricing = pricing
        self.sender = sender
        self.defaults = defaults
        self.environment = environment
        self.sample_rate = sample_rate
        # enforce_budget: what refuses calls past a spend budget, before they are made.
        self.budget = budget

    def record(
        self, provider: str, usage: Usage, started: float, error: Optional[str], attributes: Attributes, streamed: bool
    ) -> None:
        """Queues the trace of a call that started at `started` (perf_counter) and ends now."""
        ended = time.perf_counter()
        if error is None and self.sample_rate < 1.0 and random.random() >= self.sample_rate:
            self.sender.count("sampled_out")  # errors are always kept
            return
        latency_ms = _count(round((ended - started) * 1000))
        model = (usage.model or "unknown")[:MAX_MODEL]
        tokens_in = _count(usage.tokens_in)
        tokens_out = _count(usage.tokens_out)
        # The parts never exceed their whole, as the contract requires.
        cached = _part(usage.tokens_cached_in, tokens_in)
        cache_write = _part(usage.tokens_cache_write, tokens_in - (cached or 0))
        reasoning = _part(usage.tokens_reasoning, tokens_out)
        # Billing modes are sent only when they change the price: not standard, not 0.
        write_1h = _positive(_part(usage.tokens_cache_write_1h, cache_write or 0))
        audio_in = _positive(_part(usage.tokens_audio_in, tokens_in - (cached or 0) - (cache_write or 0)))
        audio_out = _positive(_part(usage.tokens_audio_out, tokens_out))
        searches = _positive(_part(usage.web_search_requests, MAX_COUNT))
        tier = None if usage.service_tier == "standard" else usage.service_tier
        priced = PricedUsage(
            tokens_in,
            tokens_out,
            cached or 0,
            cache_write or 0,
            write_1h or 0,
            audio_in or 0,
            audio_out or 0,
            searches or 0,
            tier,
        )
        trace: Dict[str, Any] = {
            "provider": provider,
            "model": model,
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "latency_ms": latency_ms,
            "cost_usd": self.pricing.cost(provider, model, priced),
            "api_key": self.api_key,
            "status": "success" if error is None else "error",
            # The call's start on the wall clock, so the service places the trace there however late it arrives.
            "called_at": _rfc3339(time.time() - (ended - started)),
        }
        if error is not None:
            trace["error"] = error[:MAX_ERROR]
        optional = (
            ("tokens_cached_in", cached),
            ("tokens_cache_write", cache_write),
            ("tokens_reasoning", reasoning),
            ("service_tier", tier),
            ("tokens_cache_write_1h", write_1h),
            ("tokens_audio_in", audio_in),
            ("tokens_audio_out", audio_out),
            ("web_search_requests", searches),
        )
        for name, value in optional:
            if value is not None:
                trace[name] = value
        if streamed and usage.first_output is not None:
            trace["ttft_ms"] = min(latency_ms, _count(round((usage.first_output - started) * 1000)))
        if self.environment is not None:
            trace["environment"] = self.environment
        attributes.fill(trace)
        if error is None and self.sample_rate < 1.0:
            trace["metadata"] = _with_entry(trace.get("metadata", {}), SAMPLE_RATE, repr(self.sample_rate))
        if error is None and not usage.reported:
            trace["metadata"] = _with_entry(trace.get("metadata", {}), *USAGE_MISSING)
        self.sender.submit(Outgoing(self.endpoint, self.api_key, trace))


# The configuration init() set, or None when not tracing.
active: Optional[Tracer] = None


def _count(value: int) -> int:
    return min(MAX_COUNT, max(0, int(value)))


def _with_entry(metadata: Dict[str, str], key: str, value: str) -> Dict[str, str]:
    """A copy of metadata with key set, making room if it is full: the SDK's own entries must not be lost."""
    entries = dict(metadata)
    if key not in entries and len(entries) >= MAX_METADATA:
        keys = list(entries)
        entries.pop(next((k for k in reversed(keys) if not k.startswith("calltrace.")), keys[-1]))
    entries[key] = value
    return entries


def _part(value: Optional[int], whole: int) -> Optional[int]:
    return None if value is None else min(whole, _count(value))


def _positive(value: Optional[int]) -> Optional[int]:
    return None if value == 0 else value


def describe(exc: BaseException) -> str:
    """The trace's error text for an exception the provider library raised."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _rfc3339(seconds: float) -> str:
    """A time as RFC 3339 in UTC with milliseconds, as the service reads `called_at`."""
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
