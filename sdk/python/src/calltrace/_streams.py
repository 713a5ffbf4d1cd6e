"""Streams that report their call when they end: exhausted, failed, closed early or dropped.

A provider stream object (OpenAI's and Anthropic's `Stream`/`AsyncStream`) is
wrapped in a proxy that still passes `isinstance` checks and forwards every
other attribute; a stream that is a plain generator (Gemini's) is wrapped in a
generator. A stream helper's context manager (Anthropic's messages.stream())
is proxied too: entering it makes the request, and the provider stream the
helper reads is then swapped for a traced one. Each reports to its call (see
_calls.Call): `keep(item)` for every item, then `ended()` (exhausted, or left
early) or `failed(exc)`. The call reports once, so e.g. close() after
exhaustion sends nothing more.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Iterable, Iterator

from ._threads import run_with, run_with_async


def traced_iter(source: Iterable[Any], call: Any) -> Iterator[Any]:
    try:
        for item in source:
            if call.keep(item):
                yield item
    except GeneratorExit:
        # The consumer broke out of its loop (or closed us): CPython closes
        # this generator as soon as the loop drops it.
        call.ended()
        raise
    except BaseException as exc:
        call.failed(exc)
        raise
    call.ended()


async def traced_aiter(source: Any, call: Any) -> AsyncIterator[Any]:
    try:
        async for item in source:
            if call.keep(item):
                yield item
    except (GeneratorExit, asyncio.CancelledError):
        # An abandoned async generator is closed by the event loop's
        # finaliser hook, shortly after the consumer's `break`; one still
        # held when the loop ends is cancelled instead. Either way the caller
        # stopped reading: the provider did not fail.
        call.ended()
        # Close the source now, as `async with` would. Left to the garbage
        # collector, a provider stream's nested generators are closed by
        # concurrent finaliser tasks, and httpx reports "aclose(): asynchronous
        # generator is already running".
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()
        raise
    except BaseException as exc:
        call.failed(exc)
        raise
    call.ended()


class _Proxy:
    __slots__ = ("_inner", "_call")

    def __init__(self, inner: Any, call: Any) -> None:
        self._inner = inner
        self._call = call

    # isinstance(proxy, openai.Stream) stays true: isinstance falls back to
    # __class__ when type() does not match.
    @property  # type: ignore[misc]
    def __class__(self):
        return self._inner.__class__

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __repr__(self) -> str:
        return repr(self._inner)


class TracedStream(_Proxy):
    __slots__ = ()

    def __iter__(self) -> Iterator[Any]:
        return traced_iter(self._inner, self._call)

    def __next__(self) -> Any:
        while True:
            try:
                item = next(self._inner)
            except StopIteration:
                self._call.ended()
                raise
            except BaseException as exc:
                self._call.failed(exc)
                raise
            if self._call.keep(item):
                return item

    def __enter__(self) -> "TracedStream":
        self._inner.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> Any:
        try:
            return self._inner.__exit__(*exc_info)
        finally:
            self._call.ended()

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._call.ended()


class TracedAsyncStream(_Proxy):
    __slots__ = ()

    def __aiter__(self) -> AsyncIterator[Any]:
        return traced_aiter(self._inner, self._call)

    async def __anext__(self) -> Any:
        while True:
            try:
                item = await self._inner.__anext__()
            except StopAsyncIteration:
                self._call.ended()
                raise
            except asyncio.CancelledError:
                self._call.ended()
                raise
            except BaseException as exc:
                self._call.failed(exc)
                raise
            if self._call.keep(item):
                return item

    async def __aenter__(self) -> "TracedAsyncStream":
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> Any:
        try:
            return await self._inner.__aexit__(*exc_info)
        finally:
            self._call.ended()

    async def close(self) -> None:
        try:
            await self._inner.close()
        finally:
            self._call.ended()


class TracedStreamManager(_Proxy):
    """A context manager that makes the streamed request when entered (Anthropic's
    MessageStreamManager): the helper it gives reads a traced provider stream."""

    __slots__ = ()

    def __enter__(self) -> Any:
        self._call.entering()
        try:
            helper = self._inner.__enter__()
        except BaseException as exc:
            self._call.failed(exc)
            raise
        self._call.opened(helper)
        return helper

    def __exit__(self, *exc_info: Any) -> Any:
        try:
            return self._inner.__exit__(*exc_info)
        finally:
            self._call.ended()


class TracedAsyncStreamManager(_Proxy):
    __slots__ = ()

    async def __aenter__(self) -> Any:
        self._call.entering()
        try:
            helper = await self._inner.__aenter__()
        except BaseException as exc:
            self._call.failed(exc)
            raise
        self._call.opened(helper)
        return helper

    async def __aexit__(self, *exc_info: Any) -> Any:
        try:
            return await self._inner.__aexit__(*exc_info)
        finally:
            self._call.ended()


class ScopedManager(_Proxy):
    """A context manager that makes its request when entered (OpenAI's .stream()
    helpers), entered in the scope of the call that made it: `values` (see
    _threads.run_with)."""

    __slots__ = ("_values",)

    def __init__(self, inner: Any, values: Any) -> None:
        super().__init__(inner, None)
        self._values = values

    def __enter__(self) -> Any:
        return run_with(self._values, self._inner.__enter__)

    def __exit__(self, *exc_info: Any) -> Any:
        return self._inner.__exit__(*exc_info)

    async def __aenter__(self) -> Any:
        return await run_with_async(self._values, self._inner.__aenter__())

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self._inner.__aexit__(*exc_info)
