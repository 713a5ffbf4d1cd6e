"""Schemathesis hooks for calltrace's fuzz run (loaded through SCHEMATHESIS_HOOKS).

The body's `api_key` must equal the key in the Authorization header (D3), which a JSON Schema
cannot say. So every generated body whose `api_key` is a non-empty string gets the real key:
positive cases then reach the store (202), and negative cases stay negative, because a
mutated `api_key` (not a string, or empty) is left as generated.
"""

import os

import schemathesis

KEY = os.environ["CALLTRACE_FUZZ_KEY"]


@schemathesis.hook
def before_call(context, case, kwargs):
    # Every phase (examples, coverage, fuzzing, stateful) passes through here just before sending.
    body = case.body
    if isinstance(body, dict) and isinstance(body.get("api_key"), str) and body["api_key"]:
        body["api_key"] = KEY
