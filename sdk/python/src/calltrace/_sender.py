"""Sends traces from daemon threads so that provider calls never wait on the network.

Traces wait in a bounded queue (the oldest is dropped when it is full, and
counted). Sender threads, each with its own kept-alive connection, post them:
one thread while traffic is light, more (up to `concurrency`) while traces
queue up faster than one connection's round trips deliver them, so a slow
service does not hold a backlog past the exit window. A thread ends after
IDLE_SECONDS without work. Retries of 429, 5xx and network errors use capped
backoff that honours the service's retry_after, and a wait one thread was told
to make holds back all of them. Nothing here ever raises into the application.
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
IDLE_SECONDS = 15.0


class Outgoing:
    """One trace on its way, with where it goes; settings may change before it is sent."""

    __slots__ = ("endpoint", "api_key", "trace", "idempotency_key", "counts")

    def __init__(self, endpoint: str, api_key: str, trace: Dict[str, Any]) -> None:
        self.endpoint = endpoint
        self.api_key = api_key
        self.trace = trace
        # Made by the sender thread, off the caller's path, and kept across retries.
        self.idempotency_key: Optional[str] = None
        # The stats of the init it was made under: one still in flight when
        # tracing restarts is not counted as the new configuration's.
        self.counts: Dict[str, int] = {}


class Sender:
    def __init__(self) -> None:
        self.max_queue = 10000
        self.policy = RetryPolicy(max_retries=5, base_delay=0.5, max_delay=60.0)
        self.timeout = 5.0
        self.concurrency = 16
        self._reset()

    def _reset(self) -> None:
        """Fresh state: at start, and in a forked child, where the parent's threads do not exist."""
        # Reentrant: a stream trace finished by the garbage collector can call
        # submit() while this same thread is inside submit().
        self._cond = threading.Condition(threading.RLock())
        self._queue: Deque[Outgoing] = collections.deque()
        self._in_flight = 0
        # Threads of this generation, and those of them waiting for work. stop()
        # starts a new generation: the threads of the old one end.
        self._generation = 0
        self._threads = 0
        self._idle = 0
        self._deadline: Optional[float] = None
        self._stopping = False
        self._blocked_until = 0.0
        self._warned_rejection = False
        self.counts = _zero_counts()

    def configure(self, max_queue: int, policy: RetryPolicy, timeout: float, concurrency: int) -> None:
        with self._cond:
            self.max_queue = max(1, max_queue)
            self.policy = policy
            self.timeout = timeout
            self.concurrency = max(1, concurrency)

    def submit(self, item: Outgoing) -> None:
        with self._cond:
            if self._stopping:
                self.counts["dropped"] += 1
                return
            while len(self._queue) >= self.max_queue:
                self._queue.popleft()
                self.counts["dropped"] += 1
            item.counts = self.counts
            self._queue.append(item)
            if len(self._queue) > self._idle and self._threads < self.concurrency:
                self._start()
            self._cond.notify()

    def pending(self) -> int:
        with self._cond:
            return len(self._queue) + self._in_flight

    def flush(self, timeout: Optional[float]) -> bool:
        """Waits until every queued trace is delivered or given up; False if time ran out."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._queue or self._in_flight:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def drain(self, timeout: float) -> bool:
        """Flush for a hard deadline (exit, shutdown): retry waits past it give the trace up."""
        with self._cond:
            self._deadline = time.monotonic() + timeout
            self._cond.notify_all()
        try:
            return self.flush(timeout)
        finally:
            with self._cond:
                self._deadline = None

    def stop(self) -> None:
        """Drops what is still queued (counted) and later submits; the threads end after their current trace."""
        with self._cond:
            self._stopping = True
            self.counts["dropped"] += len(self._queue)
            self._queue.clear()
            self._generation += 1
            self._threads = self._idle = 0
            self._cond.notify_all()

    def restart(self) -> None:
        """Accepts traces again after stop(); threads start with the next trace."""
        with self._cond:
            self._stopping = False
            self._blocked_until = 0.0
            self._warned_rejection = False
            self.counts = _zero_counts()

    def after_fork_in_child(self) -> None:
        # The parent keeps delivering what was queued at fork time; the child
        # starts empty, with its own lock, connections and (lazily) threads.
        settings = (self.max_queue, self.policy, self.timeout, self.concurrency)
        self._reset()
        self.configure(*settings)

    def count(self, outcome: str) -> None:
        with self._cond:
            self.counts[outcome] += 1

    def _start(self) -> None:
        self._threads += 1
        threading.Thread(target=self._run, args=(self._generation,), name="calltrace-sender", daemon=True).start()

    def _run(self, generation: int) -> None:
        transport = Transport(self.timeout)
        try:
            while True:
                item = self._next(generation)
                if item is None:
                    return
                try:
                    self._deliver(item, transport)
                except Exception:  # never let one bad trace end the thread
                    logger.debug("calltrace: unexpected error while sending a trace", exc_info=True)
                    self._outcome(item, "failed")
                with self._cond:
                    self._in_flight -= 1
                    if not self._queue and not self._in_flight:
                        self._cond.notify_all()
        finally:
            transport.close()

    def _next(self, generation: int) -> Optional[Outgoing]:
        """The next trace to send, or None when this thread should end (stopped, or idle too long)."""
        with self._cond:
            while generation == self._generation and not self._queue:
                self._idle += 1
                woken = self._cond.wait(IDLE_SECONDS)
                if generation != self._generation:
                    break
                self._idle -= 1
                if not woken and not self._queue:
                    self._threads -= 1
                    return None
            if generation != self._generation:
                return None
            self._in_flight += 1
            return self._queue.popleft()

    def _deliver(self, item: Outgoing, transport: Transport) -> None:
        if item.idempotency_key is None:
            item.idempotency_key = str(uuid.uuid4())
        body = json.dumps(item.trace, separators=(",", ":")).encode()
        headers = {
            "Authorization": "Bearer " + item.api_key,
            "Content-Type": "application/json",
            "Idempotency-Key": item.idempotency_key,
            "User-Agent": USER_AGENT,
        }
        transport.timeout = self.timeout
        attempt = 0
        while True:
            if not self._wait_until_unblocked():
                self._outcome(item, "failed")
                return
            delay = None
            try:
                response = transport.post(item.endpoint, headers, body)
            except Exception as exc:  # network errors are swallowed, by the spec
                logger.debug("calltrace: trace not sent: %r", exc)
            else:
                if 200 <= response.status < 300:
                    self._outcome(item, "sent")
                    return
                if not is_retryable(response.status):
                    self._rejected(item, response.status)
                    return
                delay = retry_after(response)
            attempt += 1
            if attempt > self.policy.max_retries:
                self._outcome(item, "failed")
                return
            with self._cond:
                if delay is None:
                    delay = self.policy.backoff(attempt)
                elif delay > self.policy.max_delay:
                    # e.g. the monthly quota: waiting is pointless, and the traces
                    # behind this one wait at most max_delay before probing again.
                    self._blocked_until = time.monotonic() + self.policy.max_delay
                    item.counts["failed"] += 1
                    return
                self._blocked_until = max(self._blocked_until, time.monotonic() + delay)

    def _wait_until_unblocked(self) -> bool:
        """Sleeps out a retry wait; False if it is longer than allowed or would pass the deadline."""
        with self._cond:
            while True:
                seconds = self._blocked_until - time.monotonic()
                if seconds <= 0:
                    return True
                if seconds > self.policy.max_delay:
                    return False
                if self._deadline is not None and time.monotonic() + seconds > self._deadline:
                    return False
                if self._stopping and self._deadline is None:
                    return False
                # Woken early when a deadline is set or the sender stops: re-check.
                self._cond.wait(seconds)

    def _outcome(self, item: Outgoing, outcome: str) -> None:
        with self._cond:
            item.counts[outcome] += 1

    def _rejected(self, item: Outgoing, status: int) -> None:
        with self._cond:
            item.counts["failed"] += 1
            warn = status == 401 and not self._warned_rejection
            self._warned_rejection = self._warned_rejection or warn
        if warn:
            logger.warning("calltrace: the service rejected the API key (401); traces are not being recorded")
        else:
            logger.debug("calltrace: trace rejected with HTTP %d", status)


def _zero_counts() -> Dict[str, int]:
    return {"sent": 0, "dropped": 0, "failed": 0, "sampled_out": 0}
