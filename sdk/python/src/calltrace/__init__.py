"""calltrace: one trace (tokens, cost, latency, status) per OpenAI, Anthropic or Gemini call.

    import calltrace
    calltrace.init()   # key from CALLTRACE_API_KEY

    with calltrace.attributes(user_id="u-42", tags=["search"]):
        client.chat.completions.create(..., calltrace={"metadata": {"step": "rank"}})

Traces are sent from daemon threads; at exit pending traces get up to 10 s.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from typing import Any, Dict, Iterable, List, Mapping, Optional

from . import _tracer
from ._attributes import MAX_ENVIRONMENT, Attributes, attributes, clean_text, untraced
from ._budget import BudgetExceeded, BudgetGuard, budget_url
from ._patching import patch_installed, unpatch_all
from ._pricing import Pricing, load_table, table_path
from ._retry import RetryPolicy
from ._sender import Sender
from ._tracer import Tracer

__version__ = "0.2.0"
__all__ = ["init", "attributes", "untraced", "unpatch", "flush", "shutdown", "stats", "BudgetExceeded"]

logger = logging.getLogger("calltrace")

DEFAULT_ENDPOINT = "https://api.calltrace.dev/v1/traces"
# The spec: at process exit, wait up to 10 seconds for pending traces.
EXIT_FLUSH_SECONDS = 10.0


def _read_table() -> Dict[str, Any]:
    try:
        return load_table(table_path())
    except Exception:  # a broken table must not break the application's import
        logger.warning("calltrace: unreadable price table; every call will cost 0", exc_info=True)
        return {}


_TABLE = _read_table()
_SENDER = Sender()
_lock = threading.Lock()


def init(
    api_key: Optional[str] = None,
    endpoint: Optional[str] = None,
    *,
    prices: Optional[Mapping[str, Mapping[str, Mapping[str, Any]]]] = None,
    environment: Optional[str] = None,
    tags: Optional[Iterable[str]] = None,
    metadata: Optional[Mapping[str, str]] = None,
    sample_rate: float = 1.0,
    enabled: bool = True,
    max_queue_size: int = 10000,
    concurrency: int = 16,
    timeout: float = 5.0,
    max_retries: int = 5,
    retry_base_delay: float = 0.5,
    retry_max_delay: float = 60.0,
    enforce_budget: bool = False,
    budget_refresh: float = 5.0,
) -> List[str]:
    """Starts tracing the installed provider libraries; returns their providers.

    Libraries already imported are patched now, the others when first imported.

    api_key: a ct_ key; default the CALLTRACE_API_KEY environment variable.
    endpoint: full URL ending in /v1/traces; default CALLTRACE_ENDPOINT, else the hosted service.
    prices: {provider: {model: {"input": usd_per_million, "output": usd_per_million}}},
        added to or overriding the shared price table; "cached_input", "cache_write" and
        "tiers" may be given as in sdk/pricing/models.json (cached and written input
        default to the input rate).
    environment, tags, metadata: attributes of every trace (scopes and calls add to them).
    sample_rate: the share of successful calls traced, 0.0 to 1.0; failed calls are always traced.
    enabled: False traces nothing (calltrace= options are still removed from calls).
        CALLTRACE_DISABLED=1 (or true) switches tracing off too, whatever this says.
    max_queue_size: traces waiting to be sent; when full the oldest is dropped.
    concurrency: traces sent at once, each on its own kept-alive connection.
    timeout: seconds for one request to the service.
    max_retries: retries of one trace after 429, 5xx or a network error.
    retry_base_delay, retry_max_delay: exponential backoff bounds in seconds; a
        retry_after longer than retry_max_delay gives the trace up.
    enforce_budget: True refuses a provider call with calltrace.BudgetExceeded, without
        calling the provider, once a spend budget that counts it is used up. The budget
        status (GET /v1/budget) is re-read in the background every `budget_refresh`
        seconds; calls proceed whenever it cannot be read.

    Calling init again replaces the previous configuration entirely.
    """
    if not 0.0 <= sample_rate <= 1.0:
        raise ValueError(f"calltrace: sample_rate must be between 0 and 1, got {sample_rate!r}")
    if not budget_refresh > 0:
        raise ValueError(f"calltrace: budget_refresh must be a positive number of seconds, got {budget_refresh!r}")
    key = api_key or os.environ.get("CALLTRACE_API_KEY")
    url = endpoint or os.environ.get("CALLTRACE_ENDPOINT") or DEFAULT_ENDPOINT
    # The variable is the operator's switch: it wins over the code's enabled=True.
    if os.environ.get("CALLTRACE_DISABLED", "").strip().lower() in ("1", "true"):
        enabled = False
    with _lock:
        _deactivate()
        # Patched even when not tracing, so that calls passing calltrace= keep working.
        providers = patch_installed()
        if not enabled:
            logger.info("calltrace: disabled; not tracing")
            return []
        if not key:
            logger.warning("calltrace: no API key (pass api_key or set CALLTRACE_API_KEY); not tracing")
            return []
        if not url.rstrip("/").endswith("/v1/traces"):
            logger.warning("calltrace: endpoint %r does not end in /v1/traces", url)
        policy = RetryPolicy(max_retries, retry_base_delay, retry_max_delay)
        _SENDER.configure(max_queue_size, policy, timeout, concurrency)
        _SENDER.restart()
        defaults = Attributes.given(tags=tags, metadata=metadata)
        environment = clean_text(environment, MAX_ENVIRONMENT, "environment")
        budget = BudgetGuard(budget_url(url), key, budget_refresh, timeout, environment) if enforce_budget else None
        _tracer.active = Tracer(key, url, Pricing(_TABLE, prices), _SENDER, defaults, environment, sample_rate, budget)
        if budget is not None:
            budget.start()
        return providers


def unpatch() -> None:
    """Stops tracing and restores the provider libraries; traces already queued are still sent."""
    with _lock:
        _deactivate()


def flush(timeout: Optional[float] = 10.0) -> bool:
    """Waits until queued traces are delivered or given up; False if `timeout` seconds passed first."""
    return _SENDER.flush(timeout)


def shutdown(timeout: float = 10.0) -> bool:
    """Stops tracing, delivers what is queued within `timeout` seconds, drops the rest, ends the sender thread."""
    with _lock:
        _deactivate()
    delivered = _SENDER.drain(timeout)
    _SENDER.stop()
    return delivered


def stats() -> Dict[str, int]:
    """Counts since init: sent, dropped (queue full), failed (rejected or given up),
    sampled_out (successful calls left out by sample_rate), and queued now."""
    counts = dict(_SENDER.counts)
    counts["queued"] = _SENDER.pending()
    return counts


def _deactivate() -> None:
    if _tracer.active is not None and _tracer.active.budget is not None:
        _tracer.active.budget.stop()
    _tracer.active = None
    unpatch_all()


def _after_fork_in_child() -> None:
    _SENDER.after_fork_in_child()
    active = _tracer.active
    if active is not None and active.budget is not None:
        active.budget.after_fork_in_child()


def _flush_at_exit() -> None:
    if _SENDER.pending():
        _SENDER.drain(EXIT_FLUSH_SECONDS)


# Registered at import, so it runs after any exit handler the application
# registers later (they run last-in first-out) and catches their traces too.
atexit.register(_flush_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
