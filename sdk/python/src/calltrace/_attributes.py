"""Who and what a call was for: user, session, tags, metadata, at three levels.

init() sets process defaults, `with calltrace.attributes(...)` a scope (a
context variable, so it follows `await` and asyncio tasks; _threads.py carries
it into threads), and the `calltrace=` option one call. Each level overrides
the one before: user_id and session_id are replaced, tags are added (each
once), metadata keys are replaced one by one.

Values are cleaned once, where they are given, to what the service accepts
(the contract's limits): too long is cut, a bad metadata key or a value past
the count limits is dropped, each kind of problem warned about once. A trace
is never refused for its attributes.
"""

from __future__ import annotations

import contextvars
import logging
import re
from contextlib import contextmanager
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple

logger = logging.getLogger("calltrace")

MAX_ID = 256
MAX_TAGS = 20
MAX_TAG = 64
MAX_METADATA = 32
MAX_KEY = 64
MAX_VALUE = 512
MAX_ENVIRONMENT = 64
_KEY = re.compile(r"[A-Za-z0-9_.-]+")

_warned = set()


def _warn_once(kind: str, message: str, *args: Any) -> None:
    if kind not in _warned:
        _warned.add(kind)
        logger.warning("calltrace: " + message + " (warned once)", *args)


def clean_text(value: Any, limit: int, field: str) -> Optional[str]:
    """A string the service accepts for `field`, or None for None."""
    if value is None:
        return None
    if not isinstance(value, str):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            _warn_once(field + ":type", "%s should be a string, got %s; sent as str()", field, type(value).__name__)
        value = str(value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: not valid UTF-8 on the wire
        value = value.encode("utf-8", "replace").decode("utf-8")
    if len(value) > limit:
        _warn_once(field + ":long", "%s is cut to %d characters", field, limit)
        value = value[:limit]
    return value


class Attributes:
    """One level's attributes, already cleaned; immutable."""

    __slots__ = ("user_id", "session_id", "tags", "metadata")

    def __init__(
        self,
        user_id: Optional[str] = None,
        session_id: Optional[str] = None,
        tags: Tuple[str, ...] = (),
        metadata: Optional[Dict[str, str]] = None,
    ) -> None:
        self.user_id = user_id
        self.session_id = session_id
        self.tags = tags
        self.metadata = metadata or {}

    @classmethod
    def given(cls, user_id: Any = None, session_id: Any = None, tags: Any = None, metadata: Any = None) -> "Attributes":
        return cls(
            clean_text(user_id, MAX_ID, "user_id"),
            clean_text(session_id, MAX_ID, "session_id"),
            clean_tags(tags),
            clean_metadata(metadata),
        )

    def under(self, outer: Optional["Attributes"]) -> "Attributes":
        """These attributes overriding `outer`'s."""
        if outer is None:
            return self
        tags = outer.tags + tuple(tag for tag in self.tags if tag not in outer.tags)
        if len(tags) > MAX_TAGS:
            _warn_once("tags:many", "more than %d tags on one call; the rest are dropped", MAX_TAGS)
            tags = tags[:MAX_TAGS]
        metadata = dict(outer.metadata)
        metadata.update(self.metadata)
        if len(metadata) > MAX_METADATA:
            _warn_once("metadata:many", "more than %d metadata entries on one call; the rest are dropped", MAX_METADATA)
            metadata = dict(list(metadata.items())[:MAX_METADATA])
        return Attributes(
            self.user_id if self.user_id is not None else outer.user_id,
            self.session_id if self.session_id is not None else outer.session_id,
            tags,
            metadata,
        )

    def fill(self, trace: Dict[str, Any]) -> None:
        if self.user_id is not None:
            trace["user_id"] = self.user_id
        if self.session_id is not None:
            trace["session_id"] = self.session_id
        if self.tags:
            trace["tags"] = list(self.tags)
        if self.metadata:
            trace["metadata"] = self.metadata


def clean_tags(tags: Any) -> Tuple[str, ...]:
    if tags is None:
        return ()
    if isinstance(tags, str):  # tags="billing" means one tag, not seven
        tags = [tags]
    kept = []
    for tag in tags:
        tag = clean_text(tag, MAX_TAG, "tag")
        if tag is not None and tag not in kept:
            kept.append(tag)
    if len(kept) > MAX_TAGS:
        _warn_once("tags:many", "more than %d tags on one call; the rest are dropped", MAX_TAGS)
        kept = kept[:MAX_TAGS]
    return tuple(kept)


def clean_metadata(metadata: Any) -> Dict[str, str]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        _warn_once("metadata:type", "metadata must be a mapping of strings, got %s; ignored", type(metadata).__name__)
        return {}
    kept: Dict[str, str] = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or len(key) > MAX_KEY or not _KEY.fullmatch(key):
            _warn_once("metadata:key", "metadata key %r is not 1-64 of A-Z a-z 0-9 _ . -; dropped", key)
            continue
        if value is None:
            continue
        if len(kept) == MAX_METADATA:
            _warn_once("metadata:many", "more than %d metadata entries on one call; the rest are dropped", MAX_METADATA)
            break
        kept[key] = clean_text(value, MAX_VALUE, "metadata value")
    return kept


# The scope's attributes (merged with every enclosing scope), and whether the
# code runs in an untraced block.
scope: contextvars.ContextVar[Optional[Attributes]] = contextvars.ContextVar("calltrace.scope", default=None)
untraced_block: contextvars.ContextVar[bool] = contextvars.ContextVar("calltrace.untraced", default=False)


@contextmanager
def attributes(
    user_id: Optional[str] = None,
    session_id: Optional[str] = None,
    tags: Any = None,
    metadata: Optional[Mapping[str, str]] = None,
) -> Iterator[None]:
    """Attributes for every call made inside the block, in this task or thread and those it starts."""
    from ._threads import carry_into_threads

    carry_into_threads()
    merged = Attributes.given(user_id, session_id, tags, metadata).under(scope.get())
    token = scope.set(merged)
    try:
        yield
    finally:
        scope.reset(token)


@contextmanager
def untraced() -> Iterator[None]:
    """Calls made inside the block (and the tasks and threads it starts) are not traced."""
    from ._threads import carry_into_threads

    carry_into_threads()
    token = untraced_block.set(True)
    try:
        yield
    finally:
        untraced_block.reset(token)


CALL_OPTIONS = frozenset(["user_id", "session_id", "tags", "metadata"])


def call_option(option: Any) -> Optional[Attributes]:
    """The attributes of the `calltrace=` option of one call, or None when it has none."""
    if option is None:
        return None
    if not isinstance(option, Mapping):
        _warn_once("option:type", "the calltrace= option must be a dict, got %s; ignored", type(option).__name__)
        return None
    unknown = set(option) - CALL_OPTIONS
    if unknown:
        _warn_once("option:keys", "unknown calltrace= option keys %s; ignored", sorted(map(str, unknown)))
    return Attributes.given(**{key: option[key] for key in CALL_OPTIONS if key in option})
