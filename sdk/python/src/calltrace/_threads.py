"""Carrying the attribute scope and untraced blocks into threads.

Context variables follow `await` and asyncio tasks, but a threading.Thread
starts with an empty context (before Python 3.14's thread_inherit_context),
so a scope would end at the thread boundary. Once a scope or untraced block
is first entered, calltrace therefore wraps (for the rest of the process):

- Thread.start: a thread started inside a scope runs with that scope;
- ThreadPoolExecutor.submit (also behind asyncio's run_in_executor): each
  task runs with the scope of the code that submitted it, since a pool's
  worker threads outlive the scope that happened to start them.

Only calltrace's own context variables are carried, nothing else.
"""

from __future__ import annotations

import threading
from concurrent import futures
from typing import Any, Callable, Tuple

from ._attributes import scope, untraced_block

_OUTSIDE = (None, False)
_lock = threading.Lock()
_carrying = False


def current() -> Tuple[Any, bool]:
    return scope.get(), untraced_block.get()


def run_with(values: Tuple[Any, bool], fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    scope_token, untraced_token = scope.set(values[0]), untraced_block.set(values[1])
    try:
        return fn(*args, **kwargs)
    finally:
        untraced_block.reset(untraced_token)
        scope.reset(scope_token)


async def run_with_async(values: Tuple[Any, bool], awaitable: Any) -> Any:
    scope_token, untraced_token = scope.set(values[0]), untraced_block.set(values[1])
    try:
        return await awaitable
    finally:
        untraced_block.reset(untraced_token)
        scope.reset(scope_token)


def carry_into_threads() -> None:
    global _carrying
    if _carrying:
        return
    with _lock:
        if _carrying:
            return
        start, submit = threading.Thread.start, futures.ThreadPoolExecutor.submit
        # Its tasks run in other interpreters: they cannot share our objects.
        foreign = getattr(futures, "InterpreterPoolExecutor", ())

        def start_in_scope(self: threading.Thread) -> None:
            values = current()
            if values != _OUTSIDE:
                run = self.run

                def run_in_scope() -> None:
                    try:
                        run_with(values, run)
                    finally:
                        self.__dict__.pop("run", None)  # no cycle through the thread object

                try:
                    self.run = run_in_scope  # type: ignore[method-assign]
                except AttributeError:  # a Thread subclass with __slots__ or a read-only run
                    pass
            start(self)

        def submit_in_scope(self: futures.ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
            if foreign and isinstance(self, foreign):
                return submit(self, fn, *args, **kwargs)
            return submit(self, run_with, current(), fn, *args, **kwargs)

        start_in_scope.__wrapped__ = start  # type: ignore[attr-defined]
        submit_in_scope.__wrapped__ = submit  # type: ignore[attr-defined]
        threading.Thread.start = start_in_scope  # type: ignore[method-assign]
        futures.ThreadPoolExecutor.submit = submit_in_scope  # type: ignore[method-assign]
        _carrying = True
