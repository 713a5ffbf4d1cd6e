"""Sends traces from one daemon thread so that provider calls never wait on the network.

Traces wait in a bounded queue (the oldest is dropped when it is full, and
counted). The thread posts them one at a time over a kept-alive connection,
retrying 429, 5xx and network errors with capped backoff that honours the
service's retry_after. Nothing here ever raises into the application.
"""

from __future__ import annotations

import collections
import json
import logging
import threading
import time
import uuid
from typing import Any, Deque, Dict, Optional

from ._retry import RetryPolicy, is_retryable, retry_after
from ._transport import Transport

logger = logging.getLogger("calltrace")

USER_AGENT = "calltrace-python"


class Outgoing:
    """One trace on its way, with where it goes; settings may change before it is sent."""

    __slots__ = ("endpoint", "api_key", "trace", "idempotency_key")

    def __init__(self, endpoint: str, api_key: str, trace: Dict[str, Any]) -> None:
        self.endpoint = endpoint
        self.api_key = api_key
        self.trace = trace
        # Made by the sender thread, off the caller's path, and kept across retries.
        self.idempotency_key: Optional[str] = None


class Sender:
    def __init__(self) -> None:
        self.max_queue = 1000
        self.policy = RetryPolicy(max_retries=5, base_delay=0.5, max_delay=60.0)
        self.timeout = 5.0
        self._reset()

    def _reset(self) -> None:
        """Fresh state: at start, and in a forked child, where the parent's thread does not exist."""
        # Reentrant: a stream trace finished by the garbage collector can call
        # submit() while this same thread is inside submit().
        self._cond = threading.Condition(threading.RLock())
        self._queue: Deque[Outgoing] = collections.deque()
        self._busy = False
        self._thread: Optional[threading.Thread] = None
        self._wake = threading.Event()
        self._deadline: Optional[float] = None
        self._stopping = False
        self._blocked_until = 0.0
        self._warned_rejection = False
        self._transport = Transport(self.timeout)
        self.counts = {"sent": 0, "dropped": 0, "failed": 0}

    def configure(self, max_queue: int, policy: RetryPolicy, timeout: float) -> None:
        with self._cond:
            self.max_queue = max(1, max_queue)
            self.policy = policy
            self.timeout = timeout
            self._transport.timeout = timeout

    def submit(self, item: Outgoing) -> None:
        with self._cond:
            if self._stopping:
                self.counts["dropped"] += 1
                return
            while len(self._queue) >= self.max_queue:
                self._queue.popleft()
                self.counts["dropped"] += 1
            self._queue.append(item)
            if self._thread is None:
                self._start()
            self._cond.notify()

    def pending(self) -> int:
        with self._cond:
            return len(self._queue) + (1 if self._busy else 0)

    def flush(self, timeout: Optional[float]) -> bool:
        """Waits until every queued trace is delivered or given up; False if time ran out."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._queue or self._busy:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def drain(self, timeout: float) -> bool:
        """Flush for a hard deadline (exit, shutdown): retry waits past it give the trace up."""
        with self._cond:
            self._deadline = time.monotonic() + timeout
        self._wake.set()
        try:
            return self.flush(timeout)
        finally:
            with self._cond:
                self._deadline = None
            self._wake.clear()

    def stop(self) -> None:
        """Drops what is still queued (counted) and later submits; the thread ends after its current trace."""
        with self._cond:
            self._stopping = True
            self.counts["dropped"] += len(self._queue)
            self._queue.clear()
            self._cond.notify_all()
        self._wake.set()

    def restart(self) -> None:
        """Accepts traces again after stop(); the thread starts with the next trace."""
        with self._cond:
            self._stopping = False
            self._blocked_until = 0.0
            self._warned_rejection = False
            self._wake.clear()
            self.counts = {"sent": 0, "dropped": 0, "failed": 0}

    def after_fork_in_child(self) -> None:
        # The parent keeps delivering what was queued at fork time; the child
        # starts empty, with its own lock, connection and (lazily) thread.
        settings = (self.max_queue, self.policy, self.timeout)
        self._reset()
        self.configure(*settings)

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="calltrace-sender", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    if self._stopping:
                        self._thread = None
                        self._transport.close()
                        return
                    self._cond.wait()
                item = self._queue.popleft()
                self._busy = True
            try:
                self._deliver(item)
            except Exception:  # never let one bad trace end the thread
                logger.debug("calltrace: unexpected error while sending a trace", exc_info=True)
                self._count("failed")
            with self._cond:
                self._busy = False
                if not self._queue:
                    self._cond.notify_all()

    def _deliver(self, item: Outgoing) -> None:
        if item.idempotency_key is None:
            item.idempotency_key = str(uuid.uuid4())
        body = json.dumps(item.trace, separators=(",", ":")).encode()
        headers = {
            "Authorization": "Bearer " + item.api_key,
            "Content-Type": "application/json",
            "Idempotency-Key": item.idempotency_key,
            "User-Agent": USER_AGENT,
        }
        attempt = 0
        while True:
            if not self._wait(self._blocked_until - time.monotonic()):
                self._count("failed")
                return
            delay = None
            try:
                response = self._transport.post(item.endpoint, headers, body)
            except Exception as exc:  # network errors are swallowed, by the spec
                logger.debug("calltrace: trace not sent: %r", exc)
            else:
                if 200 <= response.status < 300:
                    self._count("sent")
                    return
                if not is_retryable(response.status):
                    self._rejected(response.status)
                    return
                delay = retry_after(response)
            attempt += 1
            if attempt > self.policy.max_retries:
                self._count("failed")
                return
            if delay is None:
                delay = self.policy.backoff(attempt)
            elif delay > self.policy.max_delay:
                # e.g. the monthly quota: waiting is pointless, and the traces
                # behind this one wait at most max_delay before probing again.
                self._blocked_until = time.monotonic() + self.policy.max_delay
                self._count("failed")
                return
            self._blocked_until = time.monotonic() + delay

    def _wait(self, seconds: float) -> bool:
        """Sleeps before a retry; False if the wait is longer than allowed or would pass the deadline."""
        while seconds > 0:
            if seconds > self.policy.max_delay:
                return False
            deadline = self._deadline
            if deadline is not None and time.monotonic() + seconds > deadline:
                return False
            if self._wake.wait(seconds):
                # Woken because a deadline was set or the sender is stopping: re-check.
                self._wake.clear()
                if self._stopping and self._deadline is None:
                    return False
            seconds = self._blocked_until - time.monotonic()
        return True

    def _rejected(self, status: int) -> None:
        self._count("failed")
        if status == 401 and not self._warned_rejection:
            self._warned_rejection = True
            logger.warning("calltrace: the service rejected the API key (401); traces are not being recorded")
        else:
            logger.debug("calltrace: trace rejected with HTTP %d", status)

    def _count(self, outcome: str) -> None:
        with self._cond:
            self.counts[outcome] += 1
