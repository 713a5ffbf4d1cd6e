"""Replacing provider methods with traced ones, and putting the originals back."""

from __future__ import annotations

import importlib
import importlib.util
import logging
from typing import Any, List, Tuple

from ._calls import wrap
from .providers import LIBRARIES

logger = logging.getLogger("calltrace")

_originals: List[Tuple[type, str, Any]] = []


def _installed(library: str) -> bool:
    try:
        return importlib.util.find_spec(library) is not None
    except ImportError:  # e.g. "google.genai" without any "google" package
        return False


def patch_installed() -> List[str]:
    """Patches every supported library that is installed; returns their provider names."""
    patched = []
    for provider, library in LIBRARIES.items():
        if not _installed(library):
            continue
        try:
            targets = importlib.import_module(f".providers.{provider}", __package__).targets()
        except Exception:
            # A library version whose layout we do not know: trace the others.
            logger.warning("calltrace: cannot trace this version of %s", library, exc_info=True)
            continue
        for cls, name, shape in targets:
            original = cls.__dict__[name]
            setattr(cls, name, wrap(original, shape))
            _originals.append((cls, name, original))
        patched.append(provider)
    return patched


def unpatch_all() -> None:
    while _originals:
        cls, name, original = _originals.pop()
        setattr(cls, name, original)
