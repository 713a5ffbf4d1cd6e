"""An application that makes traced calls and exits at once, leaving its traces to the exit flush.

Usage: python exit_app.py PROVIDER_URL ENDPOINT CALLS

It imports openai only after calltrace.init(), so the library is patched on
import. It prints when its calls are done and, from an exit handler that runs
after calltrace's, when the exit flush has ended.
"""

import atexit
import sys
import time

# Registered before calltrace's own handler, so it runs after it (last in, first out).
atexit.register(lambda: print(f"flushed {time.time()}", flush=True))

import calltrace  # noqa: E402

provider_url, endpoint, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
calltrace.init(api_key="ct_exitapp0123456789abcdefghijklmnopqrs", endpoint=endpoint)
assert "anthropic" not in sys.modules and "openai" not in sys.modules

import openai  # noqa: E402

client = openai.OpenAI(api_key="sk-test", base_url=provider_url + "/v1", max_retries=0)
for _ in range(calls):
    client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
print(f"calls-done {time.time()}", flush=True)
