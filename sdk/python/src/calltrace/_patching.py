"""Replacing provider methods with traced ones, and putting the originals back.

A library the application has already imported is patched at once; one it
has not is patched when it is first imported, so init() never pays for
importing a provider library the application does not use.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import logging
import sys
from typing import Any, Dict, List, Optional, Tuple

from ._calls import wrap
from .providers import LIBRARIES

logger = logging.getLogger("calltrace")

_originals: List[Tuple[type, str, Any]] = []


def _installed(library: str) -> bool:
    try:
        return importlib.util.find_spec(library) is not None
    except (ImportError, ValueError):  # e.g. "google.genai" without any "google" package
        return False


def _patch(provider: str) -> None:
    try:
        targets = importlib.import_module(f".providers.{provider}", __package__).targets()
        # Every method looked up before any is replaced: all or nothing.
        originals = [(cls, name, shape, cls.__dict__[name]) for cls, name, shape in targets]
    except Exception:
        # A library version whose layout we do not know: trace the others.
        logger.warning("calltrace: cannot trace this version of %s", LIBRARIES[provider], exc_info=True)
        return
    for cls, name, shape, original in originals:
        setattr(cls, name, wrap(original, shape))
        _originals.append((cls, name, original))


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: lets the other finders find a provider library, then patches it once loaded."""

    def __init__(self, pending: Dict[str, str]) -> None:
        self.pending = pending  # library -> provider

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Optional[Any]:
        provider = self.pending.pop(fullname, None)
        if provider is None:
            return None
        spec = importlib.util.find_spec(fullname)  # the other finders' answer (no longer pending here)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _PatchAfterExec(spec.loader, provider, self)
        return spec


class _PatchAfterExec(importlib.abc.Loader):
    def __init__(self, loader: Any, provider: str, hook: _PatchOnImport) -> None:
        self.loader = loader
        self.provider = provider
        self.hook = hook

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        # The module keeps its real loader, as if we had never been there.
        module.__spec__.loader = module.__loader__ = self.loader
        self.loader.exec_module(module)
        if self.hook is _hook:  # tracing was not stopped or restarted meanwhile
            _patch(self.provider)


_hook: Optional[_PatchOnImport] = None


def patch_installed() -> List[str]:
    """Patches every supported library that is installed, now or on import; returns their providers."""
    global _hook
    traced, pending = [], {}
    for provider, library in LIBRARIES.items():
        if library in sys.modules:
            _patch(provider)
        elif _installed(library):
            pending[library] = provider
        else:
            continue
        traced.append(provider)
    if pending:
        _hook = _PatchOnImport(pending)
        sys.meta_path.insert(0, _hook)
    return traced


def unpatch_all() -> None:
    global _hook
    if _hook is not None:
        if _hook in sys.meta_path:
            sys.meta_path.remove(_hook)
        _hook = None
    while _originals:
        cls, name, original = _originals.pop()
        setattr(cls, name, original)
