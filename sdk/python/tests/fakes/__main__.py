"""Runs the fake provider and the fake calltrace service until stdin closes.

    python -m fakes      (with tests/ on sys.path)

Prints one JSON line with their URLs. The benchmark uses it to keep the fakes'
work out of the process it measures.
"""

import json
import sys

from .collector import Collector
from .provider import FakeProvider

provider, collector = FakeProvider().start(), Collector().start()
print(json.dumps({"provider": provider.url, "endpoint": collector.endpoint}), flush=True)
sys.stdin.read()
