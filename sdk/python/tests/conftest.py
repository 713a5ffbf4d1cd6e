"""Fixtures: a fake provider and a fake calltrace service on real sockets, and tracing wired to them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import calltrace  # noqa: E402
from fakes.collector import Collector  # noqa: E402
from fakes.provider import FakeProvider  # noqa: E402

API_KEY = "ct_testkey0123456789abcdefghijklmnopqrstuv"


@pytest.fixture(scope="session")
def _provider_server():
    server = FakeProvider().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def _collector_server():
    server = Collector().start()
    yield server
    server.stop()


@pytest.fixture
def provider(_provider_server):
    _provider_server.reset()
    return _provider_server


@pytest.fixture
def collector(_collector_server):
    _collector_server.reset()
    return _collector_server


@pytest.fixture
def tracing(collector):
    """calltrace.init() against the fake service, with short retry delays; shut down afterwards."""
    calltrace.init(api_key=API_KEY, endpoint=collector.endpoint, retry_base_delay=0.01, retry_max_delay=2.0)
    yield collector
    calltrace.shutdown(timeout=2.0)
