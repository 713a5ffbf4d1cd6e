"""A proxy in front of the real calltrace server that counts the requests it passes ("GET /v1/budget",
"POST /v1/traces") once the server has answered them, and can play a budget status that cannot be read
(budget_down: the connection is dropped)."""

from __future__ import annotations

import http.client
import threading
import time
from collections import Counter

from .server import Handler, Server

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


class ProxyHandler(Handler):
    def do_GET(self) -> None:
        self.forward()

    def do_POST(self) -> None:
        self.forward()

    def forward(self) -> None:
        fake: CountingProxy = self.fake  # type: ignore[attr-defined]
        if fake.budget_down and self.path == "/v1/budget":
            self.close_connection = True
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        upstream = http.client.HTTPConnection("127.0.0.1", fake.target_port, timeout=60)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            upstream.request(self.command, self.path, body=body, headers=headers)
            answer = upstream.getresponse()
            data = answer.read()
        finally:
            upstream.close()
        # Counted before the client reads the answer: a client that has its answer (a flush that
        # returned) must find its request counted.
        with fake.cond:
            fake.answered[f"{self.command} {self.path}"] += 1
            fake.cond.notify_all()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in _HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class CountingProxy(Server):
    handler = ProxyHandler

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.cond = threading.Condition()
        self.answered: Counter = Counter()
        self.budget_down = False

    def count(self, name: str) -> int:
        with self.cond:
            return self.answered[name]

    def wait_for(self, name: str, count: int, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.answered[name] < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"{name}: {self.answered[name]} answered, expected {count}")
                self.cond.wait(remaining)
