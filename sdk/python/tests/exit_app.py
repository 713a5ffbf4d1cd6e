"""An application that makes traced calls and exits at once, leaving its traces to the exit flush.

Usage: python exit_app.py PROVIDER_URL ENDPOINT CALLS
"""

import sys
import time

import openai

import calltrace

provider_url, endpoint, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
calltrace.init(api_key="ct_exitapp0123456789abcdefghijklmnopqrs", endpoint=endpoint)
client = openai.OpenAI(api_key="sk-test", base_url=provider_url + "/v1", max_retries=0)
for _ in range(calls):
    client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
print(f"calls-done {time.time()}", flush=True)
