"""End to end: traced calls reach the real calltrace server of this repository and are stored as sent.

Needs node and the repository's `npm install`. It never skips: without them it
fails and says what is missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

import calltrace
from shapes import SHAPES, run

REPO = Path(__file__).resolve().parents[3]
CLI = REPO / "bin" / "calltrace.js"


def node_command(*args: str) -> list:
    node = shutil.which("node")
    if node is None:
        pytest.fail("end-to-end test: `node` is not on PATH; the calltrace server needs Node.js")
    if not CLI.is_file():
        pytest.fail(f"end-to-end test: {CLI} is missing; the calltrace server is not in this checkout")
    if not (REPO / "node_modules").is_dir():
        pytest.fail(f"end-to-end test: run `npm install` in {REPO} first; the server's dependencies are missing")
    return [node, str(CLI), *args]


def cli(*args: str) -> str:
    done = subprocess.run(node_command(*args), cwd=REPO, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        pytest.fail(f"`calltrace {' '.join(args)}` exited {done.returncode}: {done.stderr}")
    return done.stdout


def listening_port(server: subprocess.Popen, timeout: float) -> int:
    """Reads the server's JSON log until its "listening" line; fails after `timeout` seconds."""
    found = {}

    def read() -> None:
        for line in server.stdout:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("msg") == "listening":
                found["port"] = entry["port"]
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if "port" not in found:
        server.kill()
        pytest.fail(f"the calltrace server did not log 'listening' within {timeout} s: {server.stderr.read()}")
    return found["port"]


@pytest.fixture(scope="module")
def calltrace_server(tmp_path_factory):
    data = tmp_path_factory.mktemp("calltrace-data")
    key = cli("keys", "create", "--plan", "free", "--data-dir", str(data)).strip()
    assert key.startswith("ct_"), key
    server = subprocess.Popen(
        node_command("serve", "--port", "0", "--data-dir", str(data)),
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        port = listening_port(server, timeout=90)
        yield {"key": key, "endpoint": f"http://127.0.0.1:{port}/v1/traces", "data": data, "process": server}
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


def stored_traces(data: Path) -> list:
    out = cli("traces", "export", "--data-dir", str(data), "--format", "jsonl")
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _seconds(rfc3339: str) -> float:
    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()


def test_traces_of_every_provider_are_accepted_and_stored_as_sent(calltrace_server, provider):
    started_at = time.time()
    calltrace.init(api_key=calltrace_server["key"], endpoint=calltrace_server["endpoint"], environment="e" * 99)
    # Attributes past every limit of the contract: cut or dropped by the SDK, so the server accepts each trace.
    too_much = dict(
        user_id="u" * 300,
        session_id="s" * 300,
        tags=[f"tag-{n}-" + "t" * 70 for n in range(25)],
        metadata={**{f"key.{n}": "v" * 600 for n in range(40)}, "bad key": "x"},
    )
    provider.cached_in, provider.reasoning, provider.anthropic_cache = 1000, 300, (100, 1000)
    try:
        with calltrace.attributes(**too_much):
            for shape in SHAPES:
                run(shape, provider.url, stream=True, asynchronous=False, calltrace={"metadata": {"step": "x" * 999}})
        provider.cached_in, provider.reasoning, provider.anthropic_cache = 0, 0, (0, 0)
        provider.fail_status = 400
        with pytest.raises(Exception):
            run(SHAPES[0], provider.url, stream=False, asynchronous=False)
        assert calltrace.flush(20)
        counts = calltrace.stats()
    finally:
        calltrace.shutdown(5)
    assert (counts["sent"], counts["failed"], counts["dropped"]) == (len(SHAPES) + 1, 0, 0)

    calltrace_server["process"].terminate()  # the export reads the store the server wrote
    calltrace_server["process"].wait(10)
    stored = stored_traces(calltrace_server["data"])

    assert len(stored) == len(SHAPES) + 1
    successes = sorted((t for t in stored if t["status"] == "success"), key=lambda t: t["provider"] + t["model"])
    assert [(t["provider"], t["model"]) for t in successes] == sorted(
        (s.provider, s.reported_model) for s in SHAPES
    )
    for trace in successes:
        assert trace["tokens_in"] == (1234 + 1100 if trace["provider"] == "anthropic" else 1234)
        assert trace["tokens_out"] == (567 + 300 if trace["provider"] == "gemini" else 567)
        assert trace["cost_usd"] > 0
        # The server prices each call itself, cached and written input included, to the bit.
        assert (trace["price_check"], trace["server_cost_usd"]) == ("PRICE_CHECK_MATCH", trace["cost_usd"])
        assert trace["latency_ms"] >= 0
        assert trace["key_id"] and trace["received_at"]
        # Placed at the call's start (D58), which came before the service received it.
        assert started_at <= _seconds(trace["called_at"]) <= _seconds(trace["received_at"])
    [failure] = [t for t in stored if t["status"] == "error"]
    assert failure["provider"] == "openai" and failure["error"].startswith("BadRequestError: ")
    assert (failure["tokens_in"], failure["tokens_out"], failure["cost_usd"]) == (0, 0, 0)
