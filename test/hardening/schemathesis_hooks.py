"""Schemathesis hooks for calltrace's fuzz run (loaded through SCHEMATHESIS_HOOKS).

The body's `api_key` must equal the key in the Authorization header (D3), which a JSON Schema
cannot say. So every generated body whose `api_key` is a non-empty string gets the real key:
positive cases then reach the store (202), and negative cases stay negative, because a
mutated `api_key` (not a string, or empty) is left as generated.
"""

import itertools
import os
from datetime import datetime, timedelta, timezone

import schemathesis

KEY = os.environ["CALLTRACE_FUZZ_KEY"]
RUN = os.environ["CALLTRACE_FUZZ_RUN"]
_run_ids = itertools.count()


@schemathesis.hook
def before_call(context, case, kwargs):
    # Every phase (examples, coverage, fuzzing, stateful) passes through here just before sending.
    if case.method.upper() == "GET" and isinstance(case.query, dict):
        keep_read_query_answerable(case.query)
    if case.method.upper() == "GET" and isinstance(case.path_parameters, dict):
        ask_for_a_stored_run(case.path_parameters)
    body = case.body
    if isinstance(body, dict) and isinstance(body.get("api_key"), str) and body["api_key"]:
        body["api_key"] = KEY
    if isinstance(body, dict):
        keep_parts_within_totals(body)
        keep_call_time_within_bounds(body)


def count(body, name):
    """A count as the server reads it: a JSON integer (475.0 is one too, as in JavaScript), 0 or more."""
    value = body.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value in (float("inf"), float("-inf")):
        return None
    return int(value) if value >= 0 and value == int(value) else None


def keep_parts_within_totals(body):
    """The cached, cache-write, 1-hour cache-write, audio and reasoning counts are parts of
    tokens_in and tokens_out (and of each other), and ttft_ms of latency_ms, which a JSON Schema
    cannot say: valid parts beyond their total are cut down so positive cases stay positive (a
    wrongly typed or negative count is left as generated)."""
    tokens_in, cached, written = count(body, "tokens_in"), count(body, "tokens_cached_in"), count(body, "tokens_cache_write")
    if tokens_in is not None and (cached or 0) + (written or 0) > tokens_in:
        if cached is not None:
            body["tokens_cached_in"] = min(cached, tokens_in)
        if written is not None:
            body["tokens_cache_write"] = tokens_in - min(cached or 0, tokens_in)
    written, written_1h = count(body, "tokens_cache_write"), count(body, "tokens_cache_write_1h")
    if written_1h is not None and body.get("tokens_cache_write") is None:
        body["tokens_cache_write"] = written = 0  # the 1-hour part needs its whole, even when 0
    if written_1h is not None and written is not None and written_1h > written:
        body["tokens_cache_write_1h"] = written
    audio_in = count(body, "tokens_audio_in")
    if tokens_in is not None and audio_in is not None:
        uncached = tokens_in - (count(body, "tokens_cached_in") or 0) - (count(body, "tokens_cache_write") or 0)
        if audio_in > uncached:
            body["tokens_audio_in"] = max(0, uncached)
    tokens_out, reasoning = count(body, "tokens_out"), count(body, "tokens_reasoning")
    if tokens_out is not None and reasoning is not None and reasoning > tokens_out:
        body["tokens_reasoning"] = tokens_out
    audio_out = count(body, "tokens_audio_out")
    if tokens_out is not None and audio_out is not None and audio_out > tokens_out:
        body["tokens_audio_out"] = tokens_out
    latency, ttft = count(body, "latency_ms"), count(body, "ttft_ms")
    if latency is not None and ttft is not None and ttft > latency:
        body["ttft_ms"] = latency


def keep_read_query_answerable(query):
    """What the read API's schema cannot say: a `cursor` is valid only as a previous page handed it
    out, and `from` must not be after `to`. A generated cursor is dropped (test/read-api checks
    a bad one is a 400) and a reversed range is put in order, so positive cases stay positive."""
    query.pop("cursor", None)
    start, end = query.get("from"), query.get("to")
    if isinstance(start, str) and isinstance(end, str):
        try:
            if datetime.fromisoformat(start.replace("z", "Z")) > datetime.fromisoformat(end.replace("z", "Z")):
                query["from"], query["to"] = end, start
        except (ValueError, TypeError):
            pass  # not a time Python reads (a leap second): left as generated


def ask_for_a_stored_run(parameters):
    """A well-formed run id the schema generates is never a stored run's: every other one is
    swapped for the run the test stored, so GET /v1/runs/{id} answers 200 as well as 404 (a
    malformed id is left as generated)."""
    value = parameters.get("id")
    if isinstance(value, str) and value.startswith(("session:", "otlp:")) and next(_run_ids) % 2 == 0:
        parameters["id"] = RUN


def keep_call_time_within_bounds(body):
    """`called_at` is accepted from the project's retention ago to 5 minutes ahead (D58), bounds
    that move with the clock, which a JSON Schema cannot say: a valid time outside them is moved
    to now, so positive cases stay positive (a malformed one is left as generated)."""
    value = body.get("called_at")
    if not isinstance(value, str):
        return
    try:
        at = datetime.fromisoformat(value.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        return  # not a time Python reads: left as generated
    if at.tzinfo is None:
        return  # no offset: not RFC 3339, left as generated
    now = datetime.now(timezone.utc)
    if not now - timedelta(days=1) <= at <= now + timedelta(minutes=1):
        body["called_at"] = now.isoformat().replace("+00:00", "Z")
