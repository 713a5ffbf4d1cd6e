"""One module per provider library; each lists the methods it patches and their Shapes."""

from __future__ import annotations

# Provider module (in this package) -> the library it patches.
LIBRARIES = {"openai": "openai", "anthropic": "anthropic", "gemini": "google.genai"}
