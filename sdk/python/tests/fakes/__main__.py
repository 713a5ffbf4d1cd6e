"""Runs the fake provider and the fake calltrace service until stdin closes.

    python -m fakes [SECONDS]      (with tests/ on sys.path)

Prints one JSON line with their URLs. The benchmarks use it to keep the fakes'
work out of the process they measure. SECONDS: how long the calltrace service
takes to answer each trace (default 0).
"""

import json
import sys

from .collector import ACCEPTED, Collector
from .provider import FakeProvider

provider, collector = FakeProvider().start(), Collector().start()
if len(sys.argv) > 1:
    collector.default = ACCEPTED[:3] + (float(sys.argv[1]),)
print(json.dumps({"provider": provider.url, "endpoint": collector.endpoint}), flush=True)
sys.stdin.read()
