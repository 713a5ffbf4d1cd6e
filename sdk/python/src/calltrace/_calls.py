"""Wrapping provider methods: time each call, read its usage, report one trace.

Each patched method has a Shape (in providers/) that knows the provider's
request and response objects. Every wrapper first takes the `calltrace=`
option (one call's attributes) out of the arguments, even when nothing is
traced. A call is traced with init's attributes, the scope's and the
option's, merged in that order. Everything here that is ours runs under
`except Exception`, so tracing trouble never reaches the application, and a
provider exception propagates untouched (a bare `raise`).
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
from typing import Any, Callable, Dict, Optional

from . import _tracer
from ._attributes import Attributes, call_option, scope, untraced_block
from ._streams import (
    ScopedManager,
    TracedAsyncStream,
    TracedAsyncStreamManager,
    TracedStream,
    TracedStreamManager,
    traced_aiter,
    traced_iter,
)
from ._threads import current, run_with, run_with_async
from ._tracer import Tracer, Usage, describe

logger = logging.getLogger("calltrace")

# The keyword argument carrying one call's attributes; removed before the
# provider library sees the call.
OPTION = "calltrace"

class Shape:
    """How one provider method's calls read; subclassed per method in providers/."""

    provider = ""

    # Makes no trace itself: the method makes its requests through other
    # traced methods, which trace each request (Gemini's automatic function
    # calling, OpenAI's .stream() helpers). It only lends them the caller's
    # scope and call option.
    outer = False

    # The method returns a context manager that makes the streamed request
    # when entered and gives a helper reading the provider's stream
    # (Anthropic's messages.stream()); trace_helper() finds that stream.
    stream_helper = False

    def streaming(self, kwargs: Dict[str, Any]) -> bool:
        return kwargs.get("stream") is True

    def prepare(self, resource: Any, kwargs: Dict[str, Any]) -> bool:
        """May add request options the trace needs; True if the caller must not see their effect."""
        return False

    def read(self, response: Any, usage: Usage) -> None:
        """Reads a complete (non-streamed) response."""

    def observe(self, item: Any, usage: Usage) -> bool:
        """Reads one streamed item; True if it only carries what prepare() asked for."""
        return False

    def trace_helper(self, helper: Any, trace: Callable[[Any], Any]) -> None:
        """Replaces the provider stream an entered stream helper reads with trace(stream)."""
        raise NotImplementedError


class Outer(Shape):
    """A method that only lends its requests the caller's scope and calltrace= option."""

    outer = True


class Call:
    __slots__ = ("tracer", "shape", "usage", "attributes", "streaming", "injected", "started", "handed_out", "done")

    def __init__(
        self, tracer: Tracer, shape: Shape, usage: Usage, attributes: Attributes, streaming: bool, injected: bool
    ) -> None:
        self.tracer = tracer
        self.shape = shape
        self.usage = usage
        self.attributes = attributes
        self.streaming = streaming
        self.injected = injected
        self.handed_out = False  # a stream was given to the caller
        self.done = False
        self.started = time.perf_counter()

    def finish(self, error: Optional[str]) -> None:
        if self.done:
            return
        self.done = True
        try:
            self.tracer.record(self.shape.provider, self.usage, self.started, error, self.attributes, self.streaming)
        except Exception:
            logger.debug("calltrace: could not record a trace", exc_info=True)

    def failed(self, exc: BaseException) -> None:
        try:
            error = describe(exc)
        except Exception:  # an exception whose str() fails
            error = type(exc).__name__
        self.finish(error)

    def returned(self, result: Any) -> Any:
        if not self.streaming:
            try:
                self.shape.read(result, self.usage)
            except Exception:
                logger.debug("calltrace: unreadable %s response", self.shape.provider, exc_info=True)
            self.finish(None)
            return result
        if self.shape.stream_helper:
            # The request is made, and the call starts, when the manager is entered.
            manager = TracedAsyncStreamManager if hasattr(result, "__aenter__") else TracedStreamManager
            return manager(result, self)
        return self.stream(result)

    def stream(self, result: Any) -> Any:
        """The caller's stand-in for a provider stream, reporting to this call."""
        self.handed_out = True
        if inspect.isgenerator(result):
            return traced_iter(result, self)
        if inspect.isasyncgen(result):
            return traced_aiter(result, self)
        if hasattr(result, "__anext__"):
            return TracedAsyncStream(result, self)
        if hasattr(result, "__next__"):
            return TracedStream(result, self)
        self.handed_out = False
        self.finish(None)  # e.g. a raw-response wrapper: latency and status only
        return result

    # Stream helper events, from _streams.
    def entering(self) -> None:
        self.started = time.perf_counter()

    def opened(self, helper: Any) -> None:
        try:
            self.shape.trace_helper(helper, self.stream)
        except Exception:
            logger.debug("calltrace: unreadable %s stream helper", self.shape.provider, exc_info=True)
            self.finish(None)  # latency and status only

    # Stream events, from _streams.
    def keep(self, item: Any) -> bool:
        try:
            extra = self.shape.observe(item, self.usage)
        except Exception:
            logger.debug("calltrace: unreadable %s stream item", self.shape.provider, exc_info=True)
            return True
        return not (extra and self.injected)

    def ended(self) -> None:
        # Also when the consumer left early: the call did not fail, and the
        # trace carries the usage seen until then (as the TypeScript SDK's).
        self.finish(self.usage.error)

    def __del__(self) -> None:
        # A stream dropped without being read to the end or closed.
        if self.handed_out and not self.done:
            self.ended()


def _option(kwargs: Dict[str, Any]) -> Optional[Attributes]:
    """Removes the calltrace= option from a call's arguments; its attributes."""
    try:
        return call_option(kwargs.pop(OPTION))
    except Exception:
        logger.debug("calltrace: unreadable calltrace= option", exc_info=True)
        return None


def _attributes(tracer: Tracer, option: Optional[Attributes]) -> Attributes:
    """init's attributes, the scope's and the call option's, merged in that order."""
    attributes = tracer.defaults
    for level in (scope.get(), option):
        if level is not None:
            attributes = level.under(attributes)
    return attributes


def _check_budget(kwargs: Dict[str, Any], option: Optional[Attributes]) -> None:
    """Raises BudgetExceeded, before the provider is called, for a call past its budget (enforce_budget).
    Untraced calls are checked too: untraced() stops the trace, not the budget."""
    tracer = _tracer.active
    if tracer is None or tracer.budget is None:
        return
    try:
        attributes = _attributes(tracer, option)
    except Exception:
        logger.debug("calltrace: could not read a call's attributes for its budget", exc_info=True)
        return
    tracer.budget.check(kwargs.get("model"), attributes)


def _start(shape: Shape, args: Any, kwargs: Dict[str, Any], option: Optional[Attributes]):
    """The Call for this invocation, or None when tracing is off or cannot start."""
    tracer = _tracer.active
    if tracer is None or untraced_block.get():
        return None
    try:
        attributes = _attributes(tracer, option)
        injected = shape.prepare(args[0] if args else None, kwargs)
        model = kwargs.get("model")
        usage = Usage(model if isinstance(model, str) else None)
        return Call(tracer, shape, usage, attributes, shape.streaming(kwargs), injected)
    except Exception:
        logger.debug("calltrace: could not start tracing a call", exc_info=True)
        return None


async def _awaited(pending: Any, call: Call) -> Any:
    try:
        result = await pending
    except BaseException as exc:
        call.failed(exc)
        raise
    return call.returned(result)


def wrap(original: Callable[..., Any], shape: Shape) -> Callable[..., Any]:
    """A traced stand-in for a provider method, sync or async like the original."""

    @functools.wraps(original)
    def traced(*args: Any, **kwargs: Any) -> Any:
        option = _option(kwargs) if OPTION in kwargs else None
        if shape.outer:
            return _lend_scope(option, original, args, kwargs)
        # A refused call is not traced: it was never made and cost nothing.
        _check_budget(kwargs, option)
        call = _start(shape, args, kwargs, option)
        if call is None:
            return original(*args, **kwargs)
        try:
            result = original(*args, **kwargs)
        except BaseException as exc:
            call.failed(exc)
            raise
        # Async methods are not always `async def` (OpenAI's sit behind a
        # plain decorator): what tells is the coroutine they return.
        if inspect.iscoroutine(result):
            return _awaited(result, call)
        return call.returned(result)

    if not inspect.iscoroutinefunction(original):
        return traced

    @functools.wraps(original)
    async def traced_async(*args: Any, **kwargs: Any) -> Any:
        # Keeps inspect.iscoroutinefunction() true, as it was for the original.
        return await traced(*args, **kwargs)

    return traced_async


def _lend_scope(option: Optional[Attributes], original: Callable[..., Any], args: Any, kwargs: Dict[str, Any]) -> Any:
    """Runs an outer method with the caller's scope (and call option) as of now,
    also for the parts that run later, while its stream is read."""
    values = current()
    if option is not None:
        values = (option.under(values[0]), values[1])
    result = run_with(values, original, *args, **kwargs)
    if inspect.iscoroutine(result):
        return _awaited_with(values, result)
    return _with_scope(values, result)


def _with_scope(values: Any, result: Any) -> Any:
    if inspect.isgenerator(result):
        return _iter_with(values, result)
    if inspect.isasyncgen(result):
        return _aiter_with(values, result)
    if hasattr(result, "__enter__") or hasattr(result, "__aenter__"):
        return ScopedManager(result, values)
    return result


async def _awaited_with(values: Any, pending: Any) -> Any:
    return _with_scope(values, await run_with_async(values, pending))


def _iter_with(values: Any, source: Any) -> Any:
    try:
        while True:
            try:
                item = run_with(values, next, source)
            except StopIteration:
                return
            yield item
    finally:
        run_with(values, source.close)


async def _aiter_with(values: Any, source: Any) -> Any:
    try:
        while True:
            try:
                item = await run_with_async(values, source.__anext__())
            except StopAsyncIteration:
                return
            yield item
    finally:
        await run_with_async(values, source.aclose())
