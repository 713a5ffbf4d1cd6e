"""A fake calltrace service: records each POST /v1/traces and answers as scripted.

Answers default to the contract's 202 {"status":"ok"}. `script` queues other
answers (status, body, headers, delay), used one per request; `default`
answers the rest. A delay is seconds, or a threading.Event the answer waits for
(a test that holds an answer until its calls are done, however busy the machine).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, List, Tuple, Union

from .server import Handler, Server

Answer = Tuple[int, Any, Dict[str, str], Union[float, threading.Event]]

ACCEPTED: Answer = (202, {"status": "ok"}, {}, 0.0)


def rate_limited(retry_after: int = 1) -> Answer:
    return (429, {"error": "Rate limit exceeded", "retry_after": retry_after}, {"Retry-After": str(retry_after)}, 0.0)


def quota_exceeded(retry_after: int = 86400) -> Answer:
    return (429, {"error": "Monthly quota exceeded", "retry_after": retry_after}, {"Retry-After": str(retry_after)}, 0.0)


def unavailable(retry_after: int = 1) -> Answer:
    return (503, {"error": "Service unavailable", "retry_after": retry_after}, {"Retry-After": str(retry_after)}, 0.0)


# Closes the connection without answering.
DROP: Answer = (0, None, {}, 0.0)

UNAUTHORIZED: Answer = (401, {"error": "Unauthorized", "message": "Invalid API key"}, {"WWW-Authenticate": "Bearer"}, 0.0)


NO_BUDGETS: Answer = (200, {"projectId": "p_fake", "budgets": []}, {}, 0.0)


def pause(delay: Union[float, threading.Event]) -> None:
    """Waits an answer's delay: its seconds, or until the test sets its Event (a minute at most)."""
    if isinstance(delay, threading.Event):
        delay.wait(60)
    elif delay:
        time.sleep(delay)


class Received:
    def __init__(self, headers: Dict[str, str], body: Any, path: str) -> None:
        self.headers = headers
        self.body = body
        self.path = path


class CollectorHandler(Handler):
    def do_GET(self) -> None:
        fake: Collector = self.fake  # type: ignore[attr-defined]
        if self.path != "/v1/budget":
            self.send_json(404, {"error": "Not found"})
            return
        with fake.cond:
            fake.budget_requests.append(dict(self.headers))
            status, answer, headers, delay = fake.budget
            fake.cond.notify_all()
        pause(delay)
        if status == DROP[0]:
            self.close_connection = True
            return
        if isinstance(answer, bytes):  # a body that is not JSON
            self.send_response(status)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            return
        self.send_json(status, answer, headers)

    def do_POST(self) -> None:
        fake: Collector = self.fake  # type: ignore[attr-defined]
        body = self.read_json()
        status, answer, headers, delay = fake.next_answer()
        with fake.cond:
            fake.requests.append(Received(dict(self.headers), body, self.path))
            fake.cond.notify_all()
        pause(delay)
        if status == DROP[0]:
            self.close_connection = True  # no answer at all: a network error for the client
            return
        self.send_json(status, answer, headers)


class Collector(Server):
    handler = CollectorHandler

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.requests: List[Received] = []
        self._script: List[Answer] = []
        self.default: Answer = ACCEPTED
        # What GET /v1/budget answers, and the headers of each request it had.
        self.budget: Answer = NO_BUDGETS
        self.budget_requests: List[Dict[str, str]] = []

    @property
    def endpoint(self) -> str:
        return self.url + "/v1/traces"

    def script(self, *answers: Answer) -> None:
        with self.cond:
            self._script.extend(answers)

    def next_answer(self) -> Answer:
        with self.cond:
            return self._script.pop(0) if self._script else self.default

    def traces(self) -> List[Dict[str, Any]]:
        """Bodies of every request received so far, retries included."""
        with self.cond:
            return [r.body for r in self.requests]

    def wait_for(self, count: int, timeout: float = 5.0) -> List[Received]:
        deadline = time.monotonic() + timeout
        with self.cond:
            while len(self.requests) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"expected {count} trace requests, got {len(self.requests)}")
                self.cond.wait(remaining)
            return list(self.requests)

    def reset(self) -> None:
        with self.cond:
            self.requests.clear()
            self._script.clear()
            self.default = ACCEPTED
            self.budget = NO_BUDGETS
            self.budget_requests.clear()

    def answer_budget(self, answer: Answer, timeout: float = 10.0) -> None:
        """Sets what GET /v1/budget answers and waits until the SDK has read that answer: a refresh
        starts only after the previous one ended, so the second request after the change means so."""
        with self.cond:
            self.budget = answer
            seen = len(self.budget_requests)
            deadline = time.monotonic() + timeout
            while len(self.budget_requests) < seen + 2:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError("the SDK stopped refreshing the budget status")
                self.cond.wait(remaining)

