"""Cost of a call from the shared price table (sdk/pricing/models.json).

The resolution rule is the one in sdk/pricing/README.md, implemented to give
the same answer as the TypeScript SDK for every name; sdk/pricing/vectors.json
checks both.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Dict, Mapping, Optional, Tuple

logger = logging.getLogger("calltrace")

SCHEMA = 1

# Where the table is: inside an installed package (put there by hatch_build.py),
# or, for an editable or in-repo install, the repository's one copy.
_PACKAGED_TABLE = Path(__file__).with_name("models.json")
_REPO_TABLE = Path(__file__).resolve().parents[3] / "pricing" / "models.json"

_SNAPSHOT_SUFFIX = re.compile(r"(-\d{4}-\d{2}-\d{2}|-\d{8}|@\d{8}|-latest|-\d{3,4}|-0)$")

# Per million tokens: (input, output).
Price = Tuple[float, float]
PriceTable = Dict[str, Dict[str, Price]]


def table_path() -> Optional[Path]:
    for path in (_PACKAGED_TABLE, _REPO_TABLE):
        if path.is_file():
            return path
    return None


def load_table(path: Optional[Path]) -> PriceTable:
    if path is None:
        logger.warning("calltrace: price table not found; every call will cost 0")
        return {}
    document = json.loads(path.read_text(encoding="utf-8"))
    if document.get("schema") != SCHEMA:
        raise ValueError(f"{path}: price table schema {document.get('schema')!r}, this SDK reads {SCHEMA}")
    return {provider: _prices(models) for provider, models in document["models"].items()}


def _prices(models: Mapping[str, Mapping[str, float]]) -> Dict[str, Price]:
    # float() now: the cost must be computed in doubles, as the TypeScript SDK
    # does, to be bit-identical (an int price would take Python's exact path).
    return {name.lower(): (float(p["input"]), float(p["output"])) for name, p in models.items()}


def resolve(keys: Mapping[str, object], model: str) -> Optional[str]:
    """The key of `keys` (one provider's table) that a reported model name prices as, or None."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    if not name:
        return None
    if name in keys:
        return name
    while True:
        stripped = _SNAPSHOT_SUFFIX.sub("", name, count=1)
        if stripped == name:
            break
        name = stripped
        if name in keys:
            return name
    best = None
    for key in keys:
        if (
            name.startswith(key + "-")
            and len(name) > len(key) + 1
            and not name[len(key) + 1].isdigit()
            and (best is None or len(key) > len(best))
        ):
            best = key
    return best


class Pricing:
    """The shared table with the user's overrides on top; answers cost questions fast."""

    def __init__(self, table: PriceTable, overrides: Optional[Mapping[str, Mapping[str, Mapping[str, float]]]]) -> None:
        self._prices: PriceTable = {provider: dict(models) for provider, models in table.items()}
        for provider, models in (overrides or {}).items():
            self._prices.setdefault(provider, {}).update(_prices(models))
        # Model names seen in traffic are few; remember how each one resolved.
        self._resolved: Dict[Tuple[str, str], Optional[Price]] = {}
        self._warned = set()

    def price(self, provider: str, model: str) -> Optional[Price]:
        key = (provider, model)
        try:
            return self._resolved[key]
        except KeyError:
            pass
        prices = self._prices.get(provider, {})
        base = resolve(prices, model)
        found = prices[base] if base is not None else None
        if len(self._resolved) < 4096:
            self._resolved[key] = found
        return found

    def cost(self, provider: str, model: str, tokens_in: int, tokens_out: int) -> float:
        price = self.price(provider, model)
        if price is None:
            if (provider, model) not in self._warned and len(self._warned) < 4096:
                self._warned.add((provider, model))
                logger.warning(
                    "calltrace: no price for %s model %r; its calls are traced with cost_usd 0 "
                    "(add it with calltrace.init(prices=...))",
                    provider,
                    model,
                )
            return 0.0
        # The documented operation order; see sdk/pricing/README.md.
        return (tokens_in * price[0] + tokens_out * price[1]) / 1e6

